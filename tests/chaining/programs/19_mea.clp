; strategy: mea
;;; MEA: the time tag of the first pattern decides.
(deffacts f (goal g1) (goal g2) (x 1) (x 2))
(defrule g-x (goal ?g) (x ?n) => (printout t ?g " with x" ?n crlf))
(defrule x-g (x ?n) (goal ?g) => (printout t "x" ?n " for " ?g crlf))
