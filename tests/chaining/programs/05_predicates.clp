;;; Predicate (:) and return-value (=) constraints.
(deftemplate reading (slot sensor) (slot value))
(deftemplate limit (slot sensor) (slot max))
(deffacts data
  (reading (sensor s1) (value 5)) (reading (sensor s2) (value 12)) (reading (sensor s3) (value 7.5))
  (reading (sensor s4) (value high))
  (limit (sensor s1) (max 10)) (limit (sensor s2) (max 10)) (limit (sensor s3) (max 7)))

(defrule over-limit
  (limit (sensor ?s) (max ?m))
  (reading (sensor ?s) (value ?v&:(numberp ?v)&:(> ?v ?m)))
  =>
  (printout t ?s " over limit by " (- ?v ?m) crlf))

(defrule non-numeric
  (reading (sensor ?s) (value ?v&:(not (numberp ?v))))
  =>
  (printout t ?s " has non-numeric value " ?v crlf))

(defrule double-exists
  (reading (sensor ?a) (value ?v&:(integerp ?v)))
  (reading (sensor ?b) (value =(* 2 ?v)))
  =>
  (printout t ?b " is twice " ?a crlf))

(defrule offset
  (reading (sensor s1) (value ?v))
  (reading (sensor ?s) (value =(+ ?v 7)))
  =>
  (printout t ?s " is s1 + 7" crlf))
