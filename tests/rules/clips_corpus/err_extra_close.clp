; clips: refuses
(defrule r (a) => ))
