; clips: loads -- loop variables inside their loops, nested, and a loop variable the LHS binds too
(defrule r (a ?i) => (foreach ?i (create$ 1 2) (printout t ?i)) (printout t ?i crlf))
(defrule s (a ?x) => (foreach ?i (create$ 1 2) (progn$ (?j (create$ 3)) (printout t ?i ?j ?j-index ?i-index)) (loop-for-count (?k 1 2) (printout t ?k ?i))))
