;;; Salience from a global, evaluated when the rule is defined; exists with variables.
(defglobal ?*urgent* = 20)
(deftemplate alert (slot level) (slot text))
(deffacts alerts
  (alert (level 1) (text "disk 80% full"))
  (alert (level 3) (text "disk failed"))
  (alert (level 2) (text "fan slow")))

(defrule urgent
  (declare (salience ?*urgent*))
  (alert (level ?l&:(>= ?l 3)) (text ?t))
  =>
  (printout t "URGENT: " ?t crlf))

(defrule normal
  (alert (level ?l&:(< ?l 3)) (text ?t))
  =>
  (printout t "note (" ?l "): " ?t crlf))

(defrule any-high
  (declare (salience -1))
  (exists (alert (level ?l&:(> ?l 1))))
  =>
  (printout t "some alert above level 1" crlf))
