; clips: loads -- =(expr) as an argument on a right-hand side
(deftemplate node (slot depth))
(defrule deeper ?n <- (node (depth ?d&:(< ?d 2))) => (duplicate ?n (depth =(+ 1 ?d))))
(defrule count => (assert (count =(+ 1 2))) (printout t =(+ 1 2) crlf))
