; clips: refuses
(defrule r (a) => (printout t "x" crlf)
(defrule s => )
