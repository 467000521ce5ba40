; clips: loads -- BPG 5.4.9 declare salience / auto-focus
(defglobal ?*s* = 5)
(defrule r1 (declare (salience 100)) => )
(defrule r2 (declare (salience ?*s*)) => )
(defrule r3 (declare (salience (+ 1 2)) (auto-focus TRUE)) => )
(defrule r4 (declare (salience -10000)) => )
