; clips: refuses
(deffunction f (x) 1)
