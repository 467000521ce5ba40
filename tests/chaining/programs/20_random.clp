; strategy: random
; seed: 1234
;;; The random strategy with a fixed seed gives a reproducible order.
(deffacts f (v 1) (v 2) (v 3) (v 4) (v 5) (v 6))
(defrule show (v ?x) => (printout t "v" ?x crlf))
(defrule square (v ?x&:(> ?x 3)) => (printout t (* ?x ?x) crlf))
