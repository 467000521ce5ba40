; clips: refuses -- allowed-values 1 does not admit 1.0 ([CSTRNCHK1])
(deftemplate t (slot x (allowed-values 1)))
(deffacts d (t (x 1.0)))
