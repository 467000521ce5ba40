; clips: refuses
(defrule r => (if TRUE (printout t x)))
