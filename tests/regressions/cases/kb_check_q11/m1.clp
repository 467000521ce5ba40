(deftemplate a (slot x))
(defrule dup (a (x ?x)) => (printout t "one" crlf))
