;;; Salience ordering, including negative and equal salience.
(deffacts go (go))
(defrule low (declare (salience -10)) (go) => (printout t "low" crlf))
(defrule high (declare (salience 100)) (go) => (printout t "high" crlf))
(defrule mid-a (declare (salience 5)) (go) => (printout t "mid-a" crlf))
(defrule mid-b (declare (salience 5)) (go) => (printout t "mid-b" crlf))
(defrule default (go) => (printout t "default" crlf) (assert (later)))
(defrule later (declare (salience 50)) (later) => (printout t "later preempts low" crlf))
