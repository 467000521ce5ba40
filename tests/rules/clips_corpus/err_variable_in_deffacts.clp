; clips: refuses
(deffacts f (a ?x))
