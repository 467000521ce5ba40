; clips: refuses
(deffunction f (?x) (switch ?x (case 1 then a) (case 1 then b)))
