; expect: 5:17 unexpected end of file
; clips: rejects
(defrule r (a ?x)
  =>
  (printout t ?x