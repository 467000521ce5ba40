; clips: loads -- BPG 5.4.1.5 predicate constraint
(defrule r (value ?x&:(integerp ?x)&:(> ?x 3)) (value2 ~:(stringp 1)) => (printout t ?x crlf))
