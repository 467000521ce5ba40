; clips: refuses
(deftemplate p (slot a))
(deffacts f (p (a 1 2)))
