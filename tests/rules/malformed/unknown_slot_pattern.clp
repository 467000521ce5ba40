; expect: 4:20 has no slot 'nam'
; clips: rejects
(deftemplate person (slot name))
(defrule r (person (nam ?n)) => )
