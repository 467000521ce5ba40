; clips: refuses
(defrule 12 (a) => )
