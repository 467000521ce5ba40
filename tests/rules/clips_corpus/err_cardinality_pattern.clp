; clips: refuses -- a pattern whose fields cannot satisfy the cardinality ([CSTRNCHK1])
(deftemplate t (multislot m (cardinality 2 3)))
(defrule r (t (m a b c d)) =>)
