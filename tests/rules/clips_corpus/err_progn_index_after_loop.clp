; clips: refuses -- [PRCCODE3] a progn$ index variable used after its loop
(defrule r (a ?x) => (progn$ (?i (create$ 1 2)) (printout t ?i)) (printout t ?i-index crlf))
