;;; A 600-step chain: many firings, asserts and retracts.
(deffacts start (counter 0))
(defrule step
  ?c <- (counter ?n&:(< ?n 600))
  =>
  (retract ?c)
  (assert (counter (+ ?n 1)))
  (if (= (mod ?n 100) 0) then (printout t "at " ?n crlf)))
(defrule done
  (counter 600)
  =>
  (printout t "done" crlf))
