; expect: 3:23 if expects 'then'
; clips: rejects
(defrule r (a ?x) => (if (> ?x 1) (printout t big crlf)))
