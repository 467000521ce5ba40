;;; Reads the console one character at a time with (get-char) until a newline or the end of
;;; input, counting letters and digits, then echoes the rest of the next line with (readline).

(defglobal ?*letters* = 0 ?*digits* = 0)

(defrule count-characters
   =>
   (printout t "Type a line: ")
   (bind ?c (get-char))
   (while (and (neq ?c -1) (neq ?c 10)) do
      (if (and (>= ?c 48) (<= ?c 57)) then (bind ?*digits* (+ ?*digits* 1))
       else (if (or (and (>= ?c 65) (<= ?c 90)) (and (>= ?c 97) (<= ?c 122)))
             then (bind ?*letters* (+ ?*letters* 1))))
      (bind ?c (get-char)))
   (printout t "letters " ?*letters* ", digits " ?*digits* crlf)
   (printout t "And a second line: ")
   (bind ?line (readline))
   (printout t "[" ?line "]" crlf)
   (printout t "Then a number: ")
   (bind ?n (read-number))
   (printout t "read-number gave " ?n " of type " (type ?n) crlf))
