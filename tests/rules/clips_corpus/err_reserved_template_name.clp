; clips: refuses
(deftemplate test (slot a))
