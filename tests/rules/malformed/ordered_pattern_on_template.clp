; expect: 4:13 is a deftemplate with slots
; clips: rejects
(deftemplate person (slot name))
(defrule r (person bob) => )
