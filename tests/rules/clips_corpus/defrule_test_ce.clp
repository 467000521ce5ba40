; clips: loads -- BPG 5.4.2 test CE
(defrule r (a ?x) (b ?y) (test (> ?x ?y)) => )
