; strategy: lex
;;; LEX: recency of the most recent fact in each activation decides.
(deffacts f (a 1) (b 1) (c 1))
(defrule ab (a ?x) (b ?x) => (printout t "ab" crlf) (assert (d ?x)))
(defrule bc (b ?x) (c ?x) => (printout t "bc" crlf))
(defrule cd (c ?x) (d ?x) => (printout t "cd" crlf))
(defrule ad (a ?x) (d ?x) => (printout t "ad" crlf))
(defrule abc (a ?x) (b ?x) (c ?x) => (printout t "abc" crlf))
