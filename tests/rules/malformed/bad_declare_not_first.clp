; expect: 3:17 (declare ...) must be the first element
; clips: rejects
(defrule r (a) (declare (salience 1)) =>)
