; expect: 4:13 unknown template 'persn'
; clips: rejects
(deftemplate person (slot name))
(defrule r (persn (name ?n)) => )
