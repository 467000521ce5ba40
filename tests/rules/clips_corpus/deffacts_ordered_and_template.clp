; clips: loads -- BPG 3.2 deffacts
(deftemplate point (slot x) (slot y))
(deffacts data "mixed facts"
   (line 0 1) (line 1 2) (label "a \"quoted\" string" sym 3.5 -7 1e3)
   ; a comment inside the data
   (point (x 1) (y 2)) (point (x 3)))
