; clips: refuses -- two values where (cardinality 0 1) allows one ([CSTRNCHK1])
(deftemplate t (multislot m (type INTEGER) (cardinality 0 1)))
(deffacts d (t (m 1 2)))
