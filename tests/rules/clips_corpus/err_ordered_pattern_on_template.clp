; clips: refuses
(deftemplate p (slot a))
(defrule r (p 1) => )
