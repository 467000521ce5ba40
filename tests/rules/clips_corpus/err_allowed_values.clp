; clips: refuses
(deftemplate light (slot colour (allowed-symbols red green)))
(defrule r (light (colour blue)) => )
