; clips: refuses
(defrule r => (bind x 1))
