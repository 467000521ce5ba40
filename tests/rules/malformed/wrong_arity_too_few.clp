; expect: 3:32 function 'mod' expects
; clips: rejects
(defrule r (a ?x) => (bind ?y (mod ?x)))
