; clips: refuses
(deffunction f (?x) (switch ?x (default b) (case 1 then a)))
