; clips: loads -- BPG 5.4.1 literal, wildcards and variables
(deftemplate person (slot name) (multislot kids))
(defrule r
   (person (name ?n) (kids $?before ?k $?))
   (data ? ?x $?rest)
   (data2 $? end)
   =>
   (printout t ?n ?k ?x $?rest ?before crlf))
