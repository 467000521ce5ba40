;;; Fact-address binding: retract and modify through ?f.
(deftemplate account (slot owner) (slot balance))
(deffacts bank
  (account (owner ann) (balance 100))
  (account (owner bob) (balance 20))
  (transfer ann bob 30)
  (transfer bob ann 500))

(defrule transfer
  ?t <- (transfer ?from ?to ?amount)
  ?a <- (account (owner ?from) (balance ?b&:(>= ?b ?amount)))
  ?c <- (account (owner ?to) (balance ?cb))
  =>
  (retract ?t)
  (modify ?a (balance (- ?b ?amount)))
  (modify ?c (balance (+ ?cb ?amount)))
  (printout t "moved " ?amount " from " ?from " to " ?to crlf))

(defrule refuse
  (declare (salience -1))
  ?t <- (transfer ?from ?to ?amount)
  =>
  (retract ?t)
  (printout t "refused " ?amount " from " ?from crlf))

(defrule balances
  (declare (salience -10))
  (account (owner ?o) (balance ?b))
  =>
  (printout t ?o ": " ?b crlf))
