; clips: refuses
(defrule r (person (name ?n)) => )
