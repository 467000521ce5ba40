; expect: 3:31 salience 20000 is outside
; clips: rejects
(defrule r (declare (salience 20000)) (a) => )
