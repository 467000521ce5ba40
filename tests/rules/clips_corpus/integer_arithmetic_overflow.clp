; clips: loads -- CLIPS wraps around at run time (warning)
(defrule r => (printout t (+ 9223372036854775807 1) " " (* 4611686018427387904 2) crlf))
