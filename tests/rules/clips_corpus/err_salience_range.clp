; clips: refuses
(defrule r (declare (salience 10001)) => )
