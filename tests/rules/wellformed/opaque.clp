; COOL and generic functions pass through as opaque constructs
(defclass SHAPE (is-a USER) (slot sides (type INTEGER)) (multislot tags))
(defmessage-handler SHAPE describe primary () (printout t ?self:sides crlf))
(definstances shapes ([triangle] of SHAPE (sides 3)) ([square] of SHAPE (sides 4)))
(defgeneric area)
(defmethod area ((?s INTEGER)) (* ?s ?s))
(defmethod area ((?w NUMBER) (?h NUMBER)) (* ?w ?h))
(defrule use-generic
   (size ?s)
   =>
   (printout t (area ?s) " " (area 2 3) crlf)
   (make-instance [extra] of SHAPE (sides 5)))
