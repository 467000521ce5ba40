; clips: loads -- BPG 7 deffunction
(deffunction square (?x) (* ?x ?x))
(deffunction sum ($?xs) (bind ?s 0) (foreach ?x ?xs (bind ?s (+ ?s ?x))) ?s)
(deffunction head (?a $?rest) ?a)
(deffunction fact (?n) (if (<= ?n 1) then 1 else (* ?n (fact (- ?n 1)))))
(defrule r => (printout t (square 3) (sum 1 2 3) (head a b) (fact 5) crlf))
