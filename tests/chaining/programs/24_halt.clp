;;; halt stops the run with activations left on the agenda.
(deffacts f (n 1) (n 2) (n 3) (n 4))
(defrule show (n ?x) => (printout t "n" ?x crlf) (if (= ?x 3) then (halt)))
