; clips: refuses -- [PRNTUTIL5] a second auto-focus in one declare (c1)
(defrule r (declare (salience 5) (auto-focus TRUE) (auto-focus FALSE)) => )
