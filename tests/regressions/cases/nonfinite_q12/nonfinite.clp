;;; Floats that are not finite, as CLIPS computes them: (exp 1000) overflows to inf.
(deftemplate in (slot x))
(deftemplate r (slot pos) (slot neg) (slot nan) (slot ok))
(defrule compute
  (in (x ?x))
  =>
  (assert (r (pos (exp 1000)) (neg (- 0 (exp 1000))) (nan (- (exp 1000) (exp 1000))) (ok (* ?x 1.5)))))
(defrule limit
  (r (pos ?p))
  =>
  (assert (limit ?p (- 0 ?p))))
