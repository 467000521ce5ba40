(defrule reads-nothing-defined (animl ?x) => (assert (seen ?x)))
