; clips: loads -- BPG 12.9.12 fact-set queries
(deftemplate person (slot name) (slot age))
(defrule r =>
   (do-for-all-facts ((?p person)) (> ?p:age 30) (printout t ?p:name crlf))
   (bind ?n (find-all-facts ((?p person)) TRUE))
   (if (any-factp ((?p person)) (eq ?p:name ann)) then (printout t yes crlf)))
