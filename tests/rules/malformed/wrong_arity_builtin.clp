; expect: 3:35 function 'sqrt' expects exactly 1 argument, got 2
; clips: rejects
(defrule r (a ?x) => (printout t (sqrt ?x 2) crlf))
