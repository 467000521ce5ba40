; clips: loads -- allowed-integers restricts integers only: 1.0 passes
(deftemplate t (slot x (allowed-integers 1)) (slot y (allowed-floats 1.0)))
(deffacts d (t (x 1.0) (y 1)))
