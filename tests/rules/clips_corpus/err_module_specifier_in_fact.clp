; clips: refuses -- (MAIN::t ...) in a deffacts: [MODULDEF1]
(deftemplate t (slot x))
(deffacts d (MAIN::t (x 1)))
