; clips: loads -- BPG 9 COOL
(defclass PERSON (is-a USER) (slot pname) (multislot kids))
(defmessage-handler PERSON greet () (printout t "hi " ?self:pname crlf))
(definstances people (ann of PERSON (pname ann)))
(defrule r ?p <- (object (is-a PERSON) (pname ?n)) => (send ?p greet))
