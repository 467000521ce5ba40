;;; A program whose firing order differs under every conflict-resolution strategy:
;;; equal salience, activations created at different times, rules of different
;;; specificity, and time tags that LEX and MEA compare. Run under all seven strategies.
(deftemplate obs (slot k) (slot v))
(deffacts seed (phase 1) (obs (k a) (v 1)) (obs (k b) (v 2)))

(defrule p1
  (phase 1)
  =>
  (assert (obs (k c) (v 3)) (obs (k d) (v 4)))
  (printout t "p1" crlf))

(defrule simple
  (obs (k ?k))
  =>
  (printout t "simple " ?k crlf))

(defrule complex
  (obs (k ?k) (v ?v&:(> ?v 1)))
  (phase ?p)
  (test (> (+ ?v ?p) 2))
  =>
  (printout t "complex " ?k crlf))

(defrule pair
  (obs (k ?a) (v ?x))
  (obs (k ?b) (v ?y&:(= ?y (+ ?x 1))))
  =>
  (printout t "pair " ?a ?b crlf))

(defrule phase-led
  (phase 1)
  (obs (k d))
  =>
  (printout t "phase-led" crlf))
