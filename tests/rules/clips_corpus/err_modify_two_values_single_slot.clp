; clips: refuses
(deftemplate p (slot a))
(defrule r ?f <- (p (a ?x)) => (modify ?f (a ?x ?x)))
