; clips: refuses -- [PRCCODE3] a foreach variable used after its loop (c15)
(defrule r (a ?x) => (foreach ?i (create$ 1 2) (printout t ?i ?i-index crlf)) (printout t ?i crlf))
