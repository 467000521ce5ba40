; expect: 4:22 needs exactly one value
; clips: rejects
(deftemplate person (slot name))
(deffacts f (person (name a b)))
