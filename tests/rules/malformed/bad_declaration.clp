; expect: 3:21 unknown declaration
; clips: rejects
(defrule r (declare (priority 3)) (a) => )
