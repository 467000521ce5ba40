; clips: refuses
(defrule r (not ?f <- (a)) => )
