; clips: refuses -- allowed-values 1 in an RHS assert of 1.0
(deftemplate t (slot x (allowed-values 1)))
(defrule r => (assert (t (x 1.0))))
