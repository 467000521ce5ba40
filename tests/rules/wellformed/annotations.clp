; Workbench annotations live in comments, so CLIPS still reads this file.
;@certainty-factors
;@askable slot=value
;@question "Does the animal have ?name?"
(deftemplate feature (slot name) (slot value (allowed-symbols yes no)))
;@askable flies
;@cf 0.8
(defrule bird
   (feature (name feathers) (value yes))
   =>
   (assert (class bird)))
