; clips: refuses
(defrule r => (no-such-function 1))
