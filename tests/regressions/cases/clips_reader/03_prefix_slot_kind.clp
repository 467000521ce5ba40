(deftemplate t (slotx))
(defrule r (t (x 1)) => (printout t "fired" crlf))
