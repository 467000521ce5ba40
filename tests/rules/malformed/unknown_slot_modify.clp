; expect: 4:42 has no slot 'nmae'
; clips: rejects
(deftemplate person (slot name))
(defrule r ?f <- (person) => (modify ?f (nmae x)))
