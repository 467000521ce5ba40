; clips: refuses
(deftemplate p (slot a (cardinality 0 2)))
