; clips: loads -- BPG 5.4.1.4 connective constraints
(deftemplate light (slot colour))
(defrule r
   (light (colour ?c&red|yellow))
   (light (colour ~green&~?c))
   (other ?x&:(> ?x 1)|0)
   =>)
