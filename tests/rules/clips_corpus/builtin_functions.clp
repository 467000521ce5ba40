; clips: loads -- BPG 12 built-in functions
(defrule r =>
   (printout t (str-cat a "b" 1) (sym-cat a b) (sub-string 1 2 "abc") (str-length "abc")
      (upcase "a") (lowcase "A") (str-index "b" "abc") (length$ (create$ 1 2))
      (nth$ 1 (create$ a)) (member$ a (create$ a)) (subseq$ (create$ a b c) 1 2)
      (explode$ "a b") (implode$ (create$ a b)) (rest$ (create$ a b)) (first$ (create$ a b))
      (abs -1) (max 1 2) (min 1 2) (mod 5 2) (div 5 2) (sqrt 4) (** 2 3) (round 1.5)
      (integer 1.5) (float 1) (atan2 1 1) (random 1 10) (gensym) (format nil "%d" 3) crlf))
