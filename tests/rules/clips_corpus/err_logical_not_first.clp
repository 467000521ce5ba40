; clips: refuses
(defrule r (a) (logical (b)) => )
