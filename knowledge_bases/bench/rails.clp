;;; rails.clp -- the rails of `workbench bench generate`'s pipeline row: real checks on each chunk
;;; (whole-word redaction of a word list, a word budget) that rarely change the text, so that the
;;; pipeline generates the same tokens as the bare engine and the row measures what the checks cost.

(deftemplate completion
  (slot text (type STRING) (default ""))
  (slot delta (type STRING) (default ""))
  (slot tokens (type INTEGER) (default 0))
  (slot finished (default FALSE)))

(deftemplate rail
  (slot action (type SYMBOL) (allowed-symbols allow redact rewrite replace stop))
  (slot text (type STRING) (default ""))
  (slot reason (type STRING) (default "")))

(deffacts bench-policy
  (redacted-words "knave" "villain" "rogue" "whoreson" "varlet" "rascal")
  (max-words 100000))

(deffunction redact-word (?s ?word)
  (bind ?out "")
  (bind ?rest ?s)
  (bind ?n (str-length ?word))
  (bind ?i (str-index ?word (lowcase ?rest)))
  (while ?i do
    (bind ?out (str-cat ?out (sub-string 1 (- ?i 1) ?rest) "[redacted]"))
    (bind ?rest (sub-string (+ ?i ?n) (str-length ?rest) ?rest))
    (bind ?i (str-index ?word (lowcase ?rest))))
  (str-cat ?out ?rest))

(deffunction redact-all (?s $?words)
  (foreach ?w ?words (bind ?s (redact-word ?s ?w)))
  ?s)

(defrule redact-insults
  (completion (delta ?d))
  (redacted-words $?words)
  (test (neq (redact-all ?d ?words) ?d))
  =>
  (assert (rail (action redact) (text (redact-all ?d ?words)) (reason "insult"))))

(defrule stop-at-word-budget
  (max-words ?max)
  (completion (tokens ?n&:(> ?n ?max)))
  =>
  (assert (rail (action stop) (reason "word budget"))))
