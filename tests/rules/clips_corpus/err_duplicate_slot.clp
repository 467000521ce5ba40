; clips: refuses
(deftemplate p (slot a) (slot a))
