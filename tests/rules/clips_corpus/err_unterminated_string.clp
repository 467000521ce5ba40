; clips: refuses
(defrule r => (printout t "never closed crlf))
