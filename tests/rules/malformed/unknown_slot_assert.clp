; expect: 4:32 has no slot 'age'
; clips: rejects
(deftemplate person (slot name))
(defrule r => (assert (person (age 3))))
