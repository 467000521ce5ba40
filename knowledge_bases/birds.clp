; Negation as failure: birds fly unless they are known to be penguins (or otherwise grounded).
(deffacts birds
   (bird tweety) (bird polly) (bird opus)
   (emperor pingu) (rockhopper rocky)
   (injured polly))

(defrule emperors-are-penguins (emperor ?x) => (assert (penguin ?x)))
(defrule rockhoppers-are-penguins (rockhopper ?x) => (assert (penguin ?x)))
(defrule penguins-are-birds (penguin ?x) => (assert (bird ?x)))

; Salience -10 stratifies the negation forwards: penguins and grounded birds are all known
; before this rule fires, as negation as failure assumes when proving backwards.
(defrule birds-fly "a bird flies unless it is a penguin or grounded"
   (declare (salience -10))
   (bird ?x)
   (not (penguin ?x))
   (not (grounded ?x))
   =>
   (assert (flies ?x)))

(defrule injured-birds-are-grounded (bird ?x) (injured ?x) => (assert (grounded ?x)))
