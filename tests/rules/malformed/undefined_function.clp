; expect: 3:35 undefined function 'squar'
; clips: rejects
(defrule r (a ?x) => (printout t (squar ?x) crlf))
