(deffacts d (a 1) (b 2))
(defrule p (a ?x) (b ?y) => (assert (p ?x ?y)))
(defrule q (p ?x ?y) => (assert (q ?x)))
