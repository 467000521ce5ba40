; Certainty factors (EMYCIN): two pieces of evidence for the same conclusion combine.
;@certainty-factors
(deffacts findings (fever) (cough) (vaccinated))

;@cf 0.6
(defrule flu-from-fever (fever) => (assert (flu)))
;@cf 0.4
(defrule flu-from-cough (cough) => (assert (flu)))

;@cf 0.6
(defrule cold-from-cough (cough) => (assert (cold)))
;@cf -0.4
(defrule cold-unlikely-when-vaccinated (vaccinated) => (assert (cold)))

;@cf 0.9
(defrule rest-for-flu (flu) => (assert (advise rest)))
