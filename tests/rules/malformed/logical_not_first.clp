; expect: 5:4 logical CEs must be placed first
; clips: rejects
(defrule r
   (a ?x)
   (logical (b ?x))
   =>
   (assert (c ?x)))
