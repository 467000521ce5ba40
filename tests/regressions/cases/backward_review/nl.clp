(deffacts d (s "a
b"))
(defrule r (s ?x) => (assert (r ?x (exp 1000))))
