; clips: refuses -- cardinality of constant values in an RHS assert ([CSTRNCHK1])
(deftemplate t (multislot m (cardinality 2 3)))
(defrule r => (assert (t (m a (+ 1 2) b c))))
