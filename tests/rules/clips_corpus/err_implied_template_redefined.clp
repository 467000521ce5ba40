; clips: refuses -- (f a b) made f an implied deftemplate: [CSTRCPSR4]
(deffacts d (f a b))
(deftemplate f (slot x))
