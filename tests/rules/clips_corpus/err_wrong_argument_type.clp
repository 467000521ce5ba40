; clips: refuses
(defrule r => (printout t (+ 1 abc) crlf))
