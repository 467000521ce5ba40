; clips: refuses
(deffunction f (?x) (switch ?x (case 1 a) (default b)))
