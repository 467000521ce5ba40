; expect: 3:34 expected
; clips: rejects
(defrule r (a ?x) (assert (b ?x)))
