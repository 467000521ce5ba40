; clips: refuses -- [MODULDEF1] in a deffacts that is not plain data
(deftemplate t (slot x))
(deffacts d (MAIN::t (x 1)) (u (+ 1 2)))
