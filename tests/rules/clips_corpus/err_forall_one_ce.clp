; clips: refuses
(defrule r (forall (a ?x)) => )
