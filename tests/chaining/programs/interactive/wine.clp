;;; Wine selection in the style of CLIPS's examples/wine.clp: questions with allowed answers,
;;; asked again until one fits, then certainty-weighted recommendations.

(deftemplate attribute (slot name) (slot value) (slot certainty (default 100.0)))

(deffunction ask-question (?question ?allowed-values)
   (printout t ?question)
   (bind ?answer (read))
   (if (lexemep ?answer) then (bind ?answer (lowcase ?answer)))
   (while (and (not (member$ ?answer ?allowed-values)) (neq ?answer eof)) do
      (printout t ?question)
      (bind ?answer (read))
      (if (lexemep ?answer) then (bind ?answer (lowcase ?answer))))
   ?answer)

(defrule ask-main-component
   =>
   (assert (attribute (name main-component)
                      (value (ask-question "Is the main component of the meal meat, fish or poultry? "
                                           (create$ meat fish poultry unknown))))))

(defrule ask-sauce
   (attribute (name main-component) (value ~eof))
   =>
   (assert (attribute (name has-sauce)
                      (value (ask-question "Does the meal have a sauce? " (create$ yes no unknown))))))

(defrule ask-budget
   (attribute (name has-sauce) (value ~eof))
   =>
   (printout t "How much would you spend on a bottle? ")
   (bind ?n (read-number))
   (assert (attribute (name budget) (value ?n))))

(defrule red-for-meat
   (attribute (name main-component) (value meat))
   =>
   (assert (attribute (name best-color) (value red) (certainty 90.0))))

(defrule white-for-fish
   (attribute (name main-component) (value fish|poultry))
   =>
   (assert (attribute (name best-color) (value white) (certainty 80.0))))

(defrule sauce-lowers-certainty
   (attribute (name has-sauce) (value yes))
   ?c <- (attribute (name best-color) (certainty ?cf&:(> ?cf 60.0)))
   =>
   (modify ?c (certainty (* ?cf 0.75))))

(defrule recommend
   (declare (salience -10))
   (attribute (name best-color) (value ?color) (certainty ?cf))
   (attribute (name budget) (value ?b))
   =>
   (if (numberp ?b)
      then (printout t "Recommended: " ?color " wine, certainty " (integer ?cf) "%, up to " ?b crlf)
      else (printout t "Recommended: " ?color " wine, certainty " (integer ?cf) "% (budget: " ?b ")" crlf)))

(defrule no-answers
   (declare (salience -20))
   (not (attribute (name best-color)))
   =>
   (printout t "No recommendation." crlf))
