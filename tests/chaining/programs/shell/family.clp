(deftemplate person (slot name) (slot age (type INTEGER)))
(deffacts people (person (name ann) (age 40)) (person (name bob) (age 12)))
(defrule adult
   (person (name ?n) (age ?a&:(>= ?a 18)))
   =>
   (printout t ?n " is an adult" crlf))
