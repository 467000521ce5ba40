; clips: refuses
(deftemplate person (slot name))
(defrule r (person (nmae ?n)) => )
