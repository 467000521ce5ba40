; clips: loads -- BPG 5.4.3-4 or / and CEs
(defrule r (or (a ?x) (and (b ?x) (c ?x))) => (printout t ?x crlf))
