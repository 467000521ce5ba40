; clips: refuses
(defrule r (a ?x) (test (> ?y 1)) => )
