; clips: loads -- a float beyond double range reads as inf
(defrule r => (printout t 1e309 " " -1e309 crlf))
