; expect: 4:1 defrule r is already defined
; clips: accepts
(defrule r (a) => )
(defrule r (b) => )
