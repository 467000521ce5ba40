;;; a defrule missing a closing parenthesis inside its first pattern
(deftemplate a (slot x))
(defrule r1 (a (x ?x) => (assert (b)))
