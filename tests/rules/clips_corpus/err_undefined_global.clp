; clips: refuses
(defrule r => (printout t ?*nope* crlf))
