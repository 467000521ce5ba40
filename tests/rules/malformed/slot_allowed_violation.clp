; expect: 4:27 not an allowed value
; clips: rejects
(deftemplate light (slot colour (allowed-symbols red green)))
(defrule r (light (colour blue)) => )
