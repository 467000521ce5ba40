; clips: refuses
(deftemplate person (slot age (type INTEGER)))
(deffacts p (person (age old)))
