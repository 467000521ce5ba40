; clips: refuses
(defrule r (a ?x) => (printout t ?y crlf))
