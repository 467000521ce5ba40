; expect: 3:18 unexpected ')'
; clips: rejects
(defrule r (a ?x&) => )
