;;; never closed
(deftemplate c (slot y))
(defrule r2 (c (y ?y)) => (assert (d ?y))
