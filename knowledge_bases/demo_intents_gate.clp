;;; demo_intents_gate.clp -- input rail in front of the text models. A request that carries a
;;; payment card number (13 to 19 digits, spaces and dashes allowed between them; ISO/IEC 7812
;;; lengths), is empty, or is too long is refused before any model sees it: the card number is
;;; never embedded, logged by a model, or routed. Concludes one (route (branch classify|refuse)).
;;; Self-contained, like demo_intents_policy.clp, so each can be edited and replayed on its own.

(deftemplate request "a free-text customer request"
  (slot id (type STRING SYMBOL) (default "anonymous"))
  (slot text (type STRING))
  (slot length (type INTEGER)))

(deftemplate route "the input gate's decision: which branch of the pipeline runs"
  (slot branch (type SYMBOL) (allowed-symbols classify refuse))
  (slot reason (type STRING) (default "")))

(deftemplate gate-policy
  (slot min-pan-digits (type INTEGER) (default 13))
  (slot max-length (type INTEGER) (default 1000)))

(deffacts intents-gate-policy (gate-policy))

(deffunction longest-digit-run (?text)
  "Most digits in a row in ?text, where a space or a dash between two digits does not break the run."
  (bind ?best 0)
  (bind ?run 0)
  (loop-for-count (?i 1 (str-length ?text))
    (bind ?c (sub-string ?i ?i ?text))
    (if (str-index ?c "0123456789")
     then (bind ?run (+ ?run 1))
          (if (> ?run ?best) then (bind ?best ?run))
     else (if (and (neq ?c " ") (neq ?c "-")) then (bind ?run 0))))
  ?best)

(defrule refuse-card-number
  "Card numbers must not travel through chat: ask for the last four digits instead."
  (declare (salience 10))
  (gate-policy (min-pan-digits ?min) (max-length ?max))
  (request (text ?t) (length ?n&:(<= ?n ?max)))   ; an over-long text is refused unscanned (the scan is per character)
  (test (>= (longest-digit-run ?t) ?min))
  (not (route))
  =>
  (assert (route (branch refuse)
                 (reason (str-cat "the message contains a payment card number (" (longest-digit-run ?t)
                                  " digits); please never share it, give the last four digits instead")))))

(defrule refuse-empty-request
  (declare (salience 10))
  (request (text ?t&:(= (str-length ?t) 0)))
  (not (route))
  =>
  (assert (route (branch refuse) (reason "the message is empty"))))

(defrule refuse-long-request
  (declare (salience 10))
  (gate-policy (max-length ?max))
  (request (length ?n&:(> ?n ?max)))
  (not (route))
  =>
  (assert (route (branch refuse) (reason (str-cat "the message has " ?n " characters; at most " ?max)))))

(defrule classify-request
  (declare (salience -10))
  (request)
  (not (route))
  =>
  (assert (route (branch classify) (reason "no input policy applies"))))
