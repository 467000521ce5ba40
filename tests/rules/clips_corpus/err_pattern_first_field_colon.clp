; clips: refuses
(defrule r (: fever) => )
