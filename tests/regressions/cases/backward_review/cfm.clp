(deffacts d (a 1) (a 2) (a 3))
;@cf 0.8
(defrule p (a ?x) => (assert (p ?x)))
