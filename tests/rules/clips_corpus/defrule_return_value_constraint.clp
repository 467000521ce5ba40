; clips: loads -- BPG 5.4.1.6 return value constraint
(defrule r (a ?x) (b =(+ ?x 1)) (c ~=(* ?x 2)) => )
