; clips: loads -- BPG 5.4.5-7 not, exists, forall
(defrule r1 (a ?x) (not (b ?x)) => )
(defrule r2 (exists (a ?)) => )
(defrule r3 (forall (student ?n) (reading ?n) (writing ?n)) => )
