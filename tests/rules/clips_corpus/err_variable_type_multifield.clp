; clips: refuses
(defrule r (data $?x) => (printout t (str-length ?x) crlf))
