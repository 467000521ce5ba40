;;; parses; calls a function nothing defines
(deftemplate e (slot z))
(defrule r3 (e (z ?z)) => (no-such-function ?z))
