; expect: 3:1 is not closed before the next construct
; clips: rejects
(defrule r (a ?x) => (assert (b ?x))
(defrule s (b ?x) => )
