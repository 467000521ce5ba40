; clips: refuses -- [PRNTUTIL5] a second salience in one declare (a14)
(defrule r (declare (auto-focus TRUE) (salience 5) (salience 6)) => )
