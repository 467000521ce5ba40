;;; well-formed and valid
(deftemplate g (slot w))
(defrule r4 (g (w ?w)) => (assert (g (w (+ ?w 1)))))
