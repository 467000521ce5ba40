; clips: refuses
(defrule r (declare (priority 3)) => )
