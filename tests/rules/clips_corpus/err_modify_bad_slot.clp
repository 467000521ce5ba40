; clips: refuses
(deftemplate p (slot a))
(defrule r ?f <- (p) => (modify ?f (b 1)))
