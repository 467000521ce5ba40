;;; Animal identification in the style of CLIPS's examples/animal.clp: a binary decision tree
;;; held as facts, walked by asking yes/no questions with (read); when the guess is wrong the
;;; program learns a new animal, asking for it and a question with (readline).

(deftemplate node
   (slot name)
   (slot type)            ; decision or answer
   (slot question)
   (slot yes-node)
   (slot no-node)
   (slot answer))

(deffacts tree
   (node (name root) (type decision) (question "Is the animal warm-blooded?")
         (yes-node n1) (no-node n2))
   (node (name n1) (type decision) (question "Does the animal purr?")
         (yes-node cat) (no-node dog))
   (node (name n2) (type answer) (answer snake))
   (node (name cat) (type answer) (answer cat))
   (node (name dog) (type answer) (answer dog))
   (current-node root))

(deffunction ask-yes-or-no (?question)
   (printout t ?question " (yes or no) ")
   (bind ?answer (read))
   (if (lexemep ?answer) then (bind ?answer (lowcase ?answer)))
   (while (and (neq ?answer yes) (neq ?answer no) (neq ?answer eof)) do
      (printout t ?question " (yes or no) ")
      (bind ?answer (read))
      (if (lexemep ?answer) then (bind ?answer (lowcase ?answer))))
   ?answer)

(defrule ask-decision-node-question
   ?current <- (current-node ?name)
   (node (name ?name) (type decision) (question ?question))
   (not (answer ?))
   =>
   (assert (answer (ask-yes-or-no ?question))))

(defrule proceed-to-yes-branch
   ?current <- (current-node ?name)
   (node (name ?name) (type decision) (yes-node ?yes-branch))
   ?answer <- (answer yes)
   =>
   (retract ?current ?answer)
   (assert (current-node ?yes-branch)))

(defrule proceed-to-no-branch
   ?current <- (current-node ?name)
   (node (name ?name) (type decision) (no-node ?no-branch))
   ?answer <- (answer no)
   =>
   (retract ?current ?answer)
   (assert (current-node ?no-branch)))

(defrule no-more-answers
   (answer eof)
   =>
   (printout t crlf "No more answers: goodbye." crlf))

(defrule ask-if-answer-node-is-correct
   ?current <- (current-node ?name)
   (node (name ?name) (type answer) (answer ?value))
   (not (answer ?))
   =>
   (printout t "I guess it is a " ?value crlf)
   (assert (answer (ask-yes-or-no "Am I correct?"))))

(defrule answer-node-guess-is-correct
   ?current <- (current-node ?name)
   (node (name ?name) (type answer))
   ?answer <- (answer yes)
   =>
   (retract ?current ?answer)
   (printout t "Good: I know this one." crlf))

(defrule answer-node-guess-is-incorrect
   ?current <- (current-node ?name)
   ?node <- (node (name ?name) (type answer) (answer ?value))
   ?answer <- (answer no)
   =>
   (retract ?answer ?current)
   (printout t "What is the animal? ")
   (bind ?new-animal (readline))
   (printout t "What question, when answered yes, tells a " ?new-animal " from a " ?value "? ")
   (bind ?question (readline))
   (bind ?yes (gensym*))
   (bind ?no (gensym*))
   (modify ?node (type decision) (question ?question) (yes-node ?yes) (no-node ?no))
   (assert (node (name ?yes) (type answer) (answer ?new-animal)))
   (assert (node (name ?no) (type answer) (answer ?value)))
   (printout t "Learned: " ?new-animal " (" ?question ")" crlf))
