; clips: refuses
(deffunction f () (loop-for-count (?i 1 2 3) do (printout t ?i)))
