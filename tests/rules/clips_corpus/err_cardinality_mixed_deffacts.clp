; clips: refuses -- cardinality in a deffacts that is not plain data
(deftemplate t (multislot m (cardinality 2 3)))
(deffacts d (t (m a)) (u (+ 1 2)))
