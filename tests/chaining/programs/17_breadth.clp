; strategy: breadth
;;; A chain under the breadth strategy: activations fire in creation order.
(deffacts start (n 0))
(defrule step
  (n ?x&:(< ?x 6))
  =>
  (assert (n (+ ?x 1)) (m ?x))
  (printout t "step " ?x crlf))
(defrule side
  (m ?x)
  =>
  (printout t "side " ?x crlf))
