(deftemplate counter (slot n) (slot state (default new)))
(deftemplate done (slot n))
(defrule mark
  ?c <- (counter (n ?n) (state new))
  =>
  (modify ?c (state marked)))
(defrule finish
  (counter (n ?n) (state marked))
  =>
  (assert (done (n ?n))))
