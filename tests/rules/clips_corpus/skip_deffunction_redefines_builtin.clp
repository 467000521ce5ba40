; clips: skips -- [DFFNXPSR2]: the deffunction is skipped, the rest loads and runs
(deffunction atan2 (?y ?x) (atan (/ ?y ?x)))
(defrule angle => (printout t (atan2 1 1) crlf))
