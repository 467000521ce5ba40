; clips: refuses
(defrule r => (printout t (abs 1 2) crlf))
