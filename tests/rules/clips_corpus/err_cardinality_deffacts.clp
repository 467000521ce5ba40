; clips: refuses -- one value where (cardinality 2 3) needs two or three ([CSTRNCHK1])
(deftemplate t (multislot m (cardinality 2 3)))
(deffacts d (t (m a)))
