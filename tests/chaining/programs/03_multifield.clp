;;; Multifield variables and functions.
(deffacts lists
  (list a b c d e)
  (list x)
  (list)
  (queue jobs j1 j2 j3))

(defrule first-and-rest
  (list ?first $?rest)
  =>
  (printout t "first " ?first " rest " (length$ ?rest) " " (implode$ ?rest) crlf))

(defrule middle
  (list $?before c $?after)
  =>
  (printout t "c after " (length$ ?before) " before " (length$ ?after) crlf))

(defrule empty
  (list)
  =>
  (printout t "empty list" crlf))

(defrule pop-queue
  ?q <- (queue ?name ?head $?tail)
  =>
  (retract ?q)
  (assert (queue ?name $?tail))
  (printout t "pop " ?head " left " (create$ $?tail) crlf))

(defrule queue-done
  (queue ?name)
  =>
  (printout t ?name " drained; " (nth$ 2 (create$ p q r)) " " (subseq$ (create$ 1 2 3 4) 2 3)
            " " (first$ (create$ u v)) " " (rest$ (create$ u v)) " " (member$ r (create$ p q r))
            " " (explode$ "7 eight \"nine\"") crlf))
