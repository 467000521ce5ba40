; clips: refuses
(deftemplate p (slot age (range 0 120)))
(deffacts f (p (age 130)))
