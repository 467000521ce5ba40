; clips: refuses
(defrule r => (printout t ? crlf))
