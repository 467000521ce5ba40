; expect: 3:34 variable ?y is used but never bound
; clips: rejects
(defrule r (a ?x) => (printout t ?y crlf))
