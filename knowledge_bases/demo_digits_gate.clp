;;; demo_digits_gate.clp -- gate in front of the digits model: only well-formed sequences are
;;; classified; a damaged one (a blank picture, a length no ID number has) is rejected before
;;; any model call. Concludes exactly one (route (branch classify|reject)).
;;; Self-contained (its templates are declared here) so that it can be edited, replayed and
;;; uploaded on its own; demo_digits_checksum.clp declares the same input templates.

;;; ---- facts from the pipeline's input node ---------------------------------------------------

(deftemplate sequence "the ID number to read"
  (slot id (type STRING SYMBOL) (default "anonymous"))
  (slot length (type INTEGER)))

(deftemplate image "one picture of the sequence, before the model sees it"
  (slot pos (type INTEGER))            ; 0-based, left to right
  (slot ink (type NUMBER)))

(deftemplate route "the gate's decision: which branch of the pipeline runs"
  (slot branch (type SYMBOL) (allowed-symbols classify reject))
  (slot reason (type STRING) (default "")))

(deftemplate gate-policy
  (slot min-ink (type NUMBER) (default 32))       ; a written digit has a few hundred units of ink
  (slot min-length (type INTEGER) (default 2))    ; payload + check digit
  (slot max-length (type INTEGER) (default 19)))  ; the longest Luhn-checked card numbers

(deffacts digits-gate-policy (gate-policy))

(defrule reject-blank-picture
  "A picture with almost no ink holds no digit: the sequence is incomplete."
  (declare (salience 10))
  (gate-policy (min-ink ?min))
  (image (pos ?p) (ink ?ink&:(< ?ink ?min)))
  (not (route))
  =>
  (assert (route (branch reject)
                 (reason (str-cat "picture " ?p " is blank (ink " ?ink " < " ?min ")")))))

(defrule reject-bad-length
  (declare (salience 10))
  (gate-policy (min-length ?lo) (max-length ?hi))
  (sequence (length ?n&:(or (< ?n ?lo) (> ?n ?hi))))
  (not (route))
  =>
  (assert (route (branch reject) (reason (str-cat "length " ?n " is outside " ?lo ".." ?hi)))))

(defrule classify-well-formed
  "Nothing is wrong with the input: let the model read it."
  (declare (salience -10))
  (sequence (length ?n))
  (not (route))
  =>
  (assert (route (branch classify) (reason (str-cat ?n " pictures with ink")))))
