; clips: refuses
(defrule r (test 1) => )
