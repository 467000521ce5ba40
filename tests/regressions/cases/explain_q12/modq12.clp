;;; A given fact that one firing matches, a later firing modifies (CLIPS's `modify` keeps the fact
;;; index), and a third firing matches again in its modified version.
(deftemplate counter (slot n) (slot state (default new)))
(deftemplate seen (slot n))
(deftemplate done (slot n))
(defrule note-new
  (declare (salience 10))
  (counter (n ?n) (state new))
  =>
  (assert (seen (n ?n))))
(defrule mark
  ?c <- (counter (n ?n) (state new))
  =>
  (modify ?c (state marked)))
(defrule finish
  (counter (n ?n) (state marked))
  (seen (n ?n))
  =>
  (assert (done (n ?n))))
