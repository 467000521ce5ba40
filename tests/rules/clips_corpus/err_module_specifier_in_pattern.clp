; clips: refuses -- (MAIN::t ...) as a pattern: [MODULDEF1]
(deftemplate t (slot x))
(defrule r (MAIN::t (x 1)) =>)
