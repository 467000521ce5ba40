; clips: refuses -- an ordered pattern made f an implied deftemplate: [CSTRCPSR4]
(defrule r (f a b) =>)
(deftemplate f (slot x))
