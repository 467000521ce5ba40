; clips: refuses
(deftemplate person (slot name))
(defrule r => (assert (person (age 3))))
