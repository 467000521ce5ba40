; clips: refuses
(defrule r (a ?x) (b $?x) => )
