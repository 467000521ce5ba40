;;; A file saved with a UTF-8 byte-order mark (as Windows editors do): CLIPS's load skips it.
(deftemplate reading (slot sensor) (slot v))
(deffacts readings (reading (sensor a) (v 7)) (reading (sensor b) (v 3)))

(defrule high
  (reading (sensor ?s) (v ?v&:(> ?v 5)))
  =>
  (printout t "high " ?s crlf))
