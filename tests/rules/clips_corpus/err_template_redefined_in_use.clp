; clips: refuses
(deftemplate t (slot a))
(defrule r (t (a 1)) => )
(deftemplate t (slot b))
