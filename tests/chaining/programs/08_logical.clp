;;; logical: truth maintenance withdraws derived facts.
(deffacts f (door open) (alarm armed))

(defrule intrusion
  (logical (door open) (alarm armed))
  =>
  (assert (intrusion))
  (printout t "intrusion detected" crlf))

(defrule siren
  (logical (intrusion))
  =>
  (assert (siren on)))

(defrule close-door
  (siren on)
  ?d <- (door open)
  =>
  (retract ?d)
  (printout t "door closed" crlf))

(defrule report-gone
  (declare (salience -10))
  (not (intrusion))
  (not (siren on))
  =>
  (printout t "intrusion and siren withdrawn" crlf))

(defrule report-still
  (declare (salience -10))
  (intrusion)
  =>
  (printout t "intrusion still believed" crlf))
