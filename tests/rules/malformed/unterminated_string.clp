; expect: 3:34 unterminated string
; clips: rejects
(defrule r (a ?x) => (printout t "hello crlf))
