; clips: loads -- BPG 12.9 fact functions
(deftemplate p (slot a) (multislot m))
(defrule r ?f <- (p (a ?a))
   =>
   (assert (p (a 1) (m 1 2 3)) (q ?a))
   (modify ?f (m))
   (duplicate ?f (a 2))
   (retract ?f)
   (bind ?x (create$ 1 2))
   (printout t (nth$ 1 ?x) crlf)
   (halt))
