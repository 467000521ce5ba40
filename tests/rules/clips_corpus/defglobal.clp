; clips: loads -- BPG 6 defglobal
(defglobal ?*x* = 3 ?*y* = (create$ a b) ?*z* = "s")
(defglobal MAIN ?*w* = (+ ?*x* 1))
(defrule r => (bind ?*x* 4) (printout t ?*x* ?*y* ?*w* crlf))
