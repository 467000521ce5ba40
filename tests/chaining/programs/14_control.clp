;;; RHS control: if/else, while, loop-for-count, switch, progn$, break, return.
(deffunction classify (?n)
  (switch (mod ?n 3)
    (case 0 then fizz)
    (case 1 then one)
    (default other)))

(deffunction first-over (?limit $?values)
  (progn$ (?v ?values)
    (if (> ?v ?limit) then (return ?v)))
  none)

(defrule loops
  =>
  (loop-for-count (?i 1 5)
    (printout t ?i ":" (classify ?i) " "))
  (printout t crlf)
  (bind ?n 10)
  (while (> ?n 0)
    (bind ?n (- ?n 3))
    (if (< ?n 3) then (break)))
  (printout t "n=" ?n crlf)
  (printout t "first over 4: " (first-over 4 1 3 5 7) ", over 9: " (first-over 9 1 2) crlf)
  (if (and (> 3 2) (or (eq a b) (neq a b))) then (printout t "logic ok" crlf) else (printout t "logic broken" crlf)))
