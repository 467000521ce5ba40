; clips: refuses
(deftemplate p (slot a (colour red)))
