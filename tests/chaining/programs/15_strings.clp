;;; String and symbol functions, format.
(deffacts w (word hello) (word "Two Words") (word Mixed-Case))

(defrule show
  (word ?w)
  =>
  (printout t (str-cat "<" ?w ">") " " (str-length ?w) " " (upcase ?w) " " (lowcase ?w)
            " " (sym-cat ?w -x) " " (sub-string 1 3 ?w) " " (str-index "o" ?w) crlf))

(defrule fmt
  (declare (salience -1))
  =>
  (printout t (format nil "%5d|%-6s|%.3f|%e" 42 "ab" 3.14159 12345.678) crlf)
  (format t "%s and %d%n" "text" 7)
  (printout t (str-compare "abc" "abd") " " (string-to-field "3.5") crlf))
