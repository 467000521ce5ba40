; clips: loads -- BPG 5.4.8 logical CE
(defrule r (logical (a ?x) (b)) (c) => (assert (d ?x)))
