; clips: refuses
(deftemplate p (slot age (range 10 1)))
