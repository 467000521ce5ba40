; clips: refuses -- a default that breaks the cardinality ([CSTRNCHK1])
(deftemplate t (multislot m (cardinality 2 3) (default a)))
