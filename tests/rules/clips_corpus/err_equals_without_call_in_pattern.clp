; clips: refuses
(defrule r (review = ?id) => )
