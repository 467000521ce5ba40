;;; demo_digits_checksum.clp -- post-processing of the digits model's readings with a domain
;;; constraint: the last digit of an ID number is a Luhn check digit (ISO/IEC 7812-1, annex B;
;;; H. P. Luhn, US patent 2,950,048). The rules
;;;   1. assemble the number as read and verify its checksum;
;;;   2. if it fails, propose for every position the one digit that would make it valid (the
;;;      Luhn map d -> 2d (minus 9 above 9) is a bijection mod 10, so that digit is unique) and
;;;      correct the position whose proposed digit the model itself finds most probable -- the
;;;      maximum-likelihood single-digit repair -- when it is clearly ahead of the runner-up;
;;;   3. send to review what they cannot settle: an ambiguous repair, or a valid number with a
;;;      low-confidence digit (a checksum cannot see two compensating errors);
;;;   4. conclude one (decision (action accept|corrected|review) (number ...) (reason ...)).
;;; Self-contained: the templates of the facts it receives (from the input node through the gate,
;;; and from the model node) are declared here.

;;; ---- facts it receives ------------------------------------------------------------------------

(deftemplate sequence "the ID number to read"
  (slot id (type STRING SYMBOL) (default "anonymous"))
  (slot length (type INTEGER)))

(deftemplate image "one picture of the sequence, before the model sees it"
  (slot pos (type INTEGER))            ; 0-based, left to right
  (slot ink (type NUMBER)))

(deftemplate route "the gate's decision: which branch of the pipeline runs"
  (slot branch (type SYMBOL) (allowed-symbols classify reject))
  (slot reason (type STRING) (default "")))

(deftemplate digit "the model's reading of one picture"
  (slot pos (type INTEGER))
  (slot label (type INTEGER) (range 0 9))
  (slot score (type FLOAT))            ; softmax probability of `label`
  (multislot probs))

(deftemplate review-policy
  (slot review-below (type FLOAT) (default 0.6))          ; digit score under which a person looks
  (slot min-repair-prob (type FLOAT) (default 0.001))     ; the model must not rule the repair out
  (slot ambiguity-ratio (type FLOAT) (default 10.0)))     ; best repair vs runner-up, at least

(deffacts digits-review-policy (review-policy))

(deftemplate reading "the number as the model read it, assembled left to right"
  (multislot digits)
  (slot complete (type SYMBOL) (allowed-symbols no yes) (default no)))

(deftemplate checksum
  (slot scheme (type SYMBOL) (default luhn))
  (slot sum (type INTEGER))
  (slot valid (type SYMBOL) (allowed-symbols yes no)))

(deftemplate candidate "a single-digit repair that makes the checksum valid"
  (slot pos (type INTEGER)) (slot was (type INTEGER)) (slot now (type INTEGER))
  (slot prob (type FLOAT)))                               ; the model's probability of `to` there

(deftemplate correction
  (slot pos (type INTEGER)) (slot was (type INTEGER)) (slot now (type INTEGER))
  (slot prob (type FLOAT)) (slot runner-up (type FLOAT)))

(deftemplate decision
  (slot action (type SYMBOL) (allowed-symbols accept corrected review))
  (slot number (type STRING) (default ""))          ; the number concluded
  (slot read (type STRING) (default ""))            ; the number as the model read it
  (slot reason (type STRING) (default "")))

(deffunction luhn-term (?d ?pos ?n)
  "Contribution of digit ?d at 0-based position ?pos (from the left) of an ?n-digit number:
   every second digit counting from the check digit is doubled, minus 9 when above 9."
  (if (= (mod (- (- ?n 1) ?pos) 2) 1)
   then (bind ?x (* 2 ?d))
        (if (> ?x 9) then (- ?x 9) else ?x)
   else ?d))

(deffunction luhn-sum ($?digits)
  (bind ?n (length$ ?digits))
  (bind ?s 0)
  (loop-for-count (?i 1 ?n)
    (bind ?s (+ ?s (luhn-term (nth$ ?i ?digits) (- ?i 1) ?n))))
  ?s)

(deffunction luhn-repair (?pos ?from ?sum ?n)
  "The digit that, in place of ?from at ?pos, makes a Luhn sum of ?sum divisible by 10."
  (bind ?rest (- ?sum (luhn-term ?from ?pos ?n)))
  (bind ?found -1)
  (loop-for-count (?d 0 9)
    (if (and (<> ?d ?from) (= (mod (+ ?rest (luhn-term ?d ?pos ?n)) 10) 0))
     then (bind ?found ?d)))
  ?found)

(deffunction digits-string ($?digits)
  (bind ?s "")
  (foreach ?d ?digits (bind ?s (str-cat ?s ?d)))
  ?s)

;;; 1. read the number and verify the check digit

(defrule start-reading
  (declare (salience 40))
  (sequence)
  (not (reading))
  =>
  (assert (reading)))

(defrule read-next-digit
  (declare (salience 40))
  ?r <- (reading (digits $?d) (complete no))
  (digit (pos ?p&:(= ?p (length$ ?d))) (label ?l))
  =>
  (modify ?r (digits ?d ?l)))

(defrule reading-complete
  (declare (salience 30))
  ?r <- (reading (digits $?d) (complete no))
  (sequence (length ?n&:(= ?n (length$ ?d))))
  =>
  (modify ?r (complete yes)))

(defrule verify-checksum
  (declare (salience 30))
  (reading (digits $?d) (complete yes))
  (not (checksum))
  =>
  (bind ?s (luhn-sum ?d))
  (assert (checksum (sum ?s) (valid (if (= (mod ?s 10) 0) then yes else no)))))

;;; 2. repair a failed checksum

(defrule propose-repair
  (declare (salience 20))
  (checksum (valid no) (sum ?s))
  (sequence (length ?n))
  (digit (pos ?p) (label ?l) (probs $?probs))
  =>
  (bind ?to (luhn-repair ?p ?l ?s ?n))
  (assert (candidate (pos ?p) (was ?l) (now ?to) (prob (float (nth$ (+ ?to 1) ?probs))))))

(defrule correct-most-probable-repair
  "The repair the model finds most probable, clearly ahead of the best repair elsewhere."
  (declare (salience 10))
  (review-policy (min-repair-prob ?min) (ambiguity-ratio ?k))
  (candidate (pos ?p) (was ?f) (now ?t) (prob ?best&:(>= ?best ?min)))
  (not (candidate (pos ~?p) (prob ?o&:(>= ?o ?best))))
  (candidate (pos ?q&~?p) (prob ?second))
  (not (candidate (pos ?q2&~?p&~?q) (prob ?o2&:(> ?o2 ?second))))
  (test (>= ?best (* ?k ?second)))
  (not (correction))
  =>
  (assert (correction (pos ?p) (was ?f) (now ?t) (prob ?best) (runner-up ?second))))

;;; 3. and 4. decide

(defrule accept-valid-number
  (review-policy (review-below ?th))
  (checksum (valid yes))
  (reading (digits $?d) (complete yes))
  (not (digit (score ?s&:(< ?s ?th))))
  (not (decision))
  =>
  (assert (decision (action accept) (number (digits-string ?d)) (read (digits-string ?d))
                    (reason (str-cat "Luhn checksum valid; every digit scored >= " ?th)))))

(defrule review-low-confidence-digit
  (review-policy (review-below ?th))
  (checksum (valid yes))
  (reading (digits $?d) (complete yes))
  (digit (pos ?p) (label ?l) (score ?s&:(< ?s ?th)))
  (not (decision))
  =>
  (assert (decision (action review) (number (digits-string ?d)) (read (digits-string ?d))
                    (reason (str-cat "checksum valid but position " ?p " read as " ?l
                                     " with score " ?s " < " ?th)))))

(defrule accept-corrected-number
  (checksum (valid no))
  (reading (digits $?d) (complete yes))
  (correction (pos ?p) (was ?f) (now ?t) (prob ?pb) (runner-up ?r))
  (not (decision))
  =>
  (assert (decision (action corrected)
                    (number (digits-string (replace$ ?d (+ ?p 1) (+ ?p 1) ?t))) (read (digits-string ?d))
                    (reason (str-cat "checksum failed; position " ?p " corrected " ?f " -> " ?t
                                     " (model p=" ?pb ", best repair elsewhere p=" ?r ")")))))

(defrule review-unrepairable-number
  (declare (salience -10))
  (checksum (valid no))
  (reading (digits $?d) (complete yes))
  (not (correction))
  (not (decision))
  =>
  (assert (decision (action review) (number (digits-string ?d)) (read (digits-string ?d))
                    (reason "checksum failed and no single-digit repair is clearly most probable"))))
