; clips: refuses
(defrule r => (printout t (upcase (+ 1 2)) crlf))
