; expect: 3:22 variable ?z is used but never bound
; clips: rejects
(defrule r (a ?x&:(> ?z 1)) => )
