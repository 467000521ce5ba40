; expect: 3:28 global variable ?*total* is not defined
; clips: rejects
(defrule r (a ?x) => (bind ?*total* (+ ?*total* ?x)))
