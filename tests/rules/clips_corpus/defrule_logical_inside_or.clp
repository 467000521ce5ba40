; clips: loads -- logical CEs inside each branch of a leading or
(deffacts start (g) (k))
(defrule logical-or (or (logical (g)) (logical (h))) (logical (k)) => (assert (x)))
