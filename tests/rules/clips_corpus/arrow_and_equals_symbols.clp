; clips: loads -- <- and = as plain symbols where CLIPS reads them so
(deffacts = (a <- b) (edge : c))
(defrule r (<-) (a <- ?x) => (assert (x <- ?x)) (printout t = x crlf))
