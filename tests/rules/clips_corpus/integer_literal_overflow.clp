; clips: loads -- CLIPS warns and clamps to 64 bits (warning)
(defrule r => (printout t 9223372036854775808 " " -9223372036854775809 crlf))
