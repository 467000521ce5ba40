; clips: loads -- BPG 5.4.1.8 pattern addresses
(deftemplate lamp (slot state))
(defrule r ?f <- (lamp (state off)) ?g <- (other) => (modify ?f (state on)) (retract ?g))
