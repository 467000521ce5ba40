; clips: refuses -- cardinality in modify ([CSTRNCHK1])
(deftemplate t (multislot m (cardinality 2 3)))
(defrule r ?f <- (t) => (modify ?f (m a)))
