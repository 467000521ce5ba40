; clips: refuses
(deftemplate t (slot s (type SYMBOL)))
(defrule r (t (s ?x)) => (printout t (+ ?x 1) crlf))
