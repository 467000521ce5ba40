; clips: refuses -- a slot keyword ends where a word ends: slotx is no slot
(deftemplate t (slotx))
(defrule r (t (x 1)) => (printout t "fired" crlf))
