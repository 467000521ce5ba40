; clips: refuses
(defrule $? (a) => )
