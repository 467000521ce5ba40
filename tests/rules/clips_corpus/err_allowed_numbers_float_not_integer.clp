; clips: refuses -- allowed-numbers 1 2 does not admit 1.0, in mixed deffacts
(deftemplate t (slot x (allowed-numbers 1 2)))
(deffacts d (t (x 1.0)) (u (+ 1 2)))
