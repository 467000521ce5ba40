; clips: loads -- BPG 8 generic functions
(defgeneric area)
(defmethod area ((?r NUMBER)) (* 3.14 ?r ?r))
(defmethod area ((?w NUMBER) (?h NUMBER)) (* ?w ?h))
(defrule r => (printout t (area 2) (area 2 3) crlf))
