(defrule dup (a (x ?x)) => (printout t "two" crlf))
(deffacts f (a (x 1)))
