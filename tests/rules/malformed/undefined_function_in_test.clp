; expect: 3:26 undefined function 'bigger'
; clips: rejects
(defrule r (a ?x) (test (bigger ?x 3)) => )
