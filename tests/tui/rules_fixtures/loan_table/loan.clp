(deftemplate applicant
  (slot income (type NUMBER))
  (slot region (type SYMBOL) (allowed-symbols north south east west))
  (slot score (type INTEGER) (range 0 1000)))
(deftemplate decision
  (slot action (type SYMBOL))
  (slot reason (type STRING))
  (slot limit (type FLOAT)))
(defrule print-decision
  (decision (action ?a) (reason ?r))
  =>
  (printout t ?a ": " ?r crlf))
