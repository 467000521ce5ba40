;;; demo_rails.clp -- input and output rails for the demo language model (a small Llama-family
;;; model trained on Shakespeare's plays). Contract shared with the OpenAI-compatible API's
;;; `rails` option (workbench/serving.py) and the demo's generation runner:
;;;   in:  one (prompt (text ...)) before generation, or one
;;;        (completion (text <all shown so far + delta>) (delta <new text>) (tokens N) (finished TRUE|FALSE))
;;;        after each streamed step;
;;;   out: the last (rail (action allow|block|rewrite|stop) (text ...) (reason ...)) decides:
;;;        block  -- do not generate; `text` is the answer;
;;;        rewrite -- show `text` instead of the delta (redaction);
;;;        stop   -- show `text` instead of the delta, then end the generation (KV blocks freed).
;;; Policies:
;;;   input  -- no card numbers or e-mail addresses in prompts; prompts of at most 400 characters;
;;;   stop   -- one speech per answer: a new speaker's line ("KING RICHARD III:") ends it;
;;;   length -- at most 60 words;
;;;   content-- a second violent word (kill, murder, blood, ...) ends the answer;
;;;   redact -- insults (knave, villain, ...) are shown as [redacted], and the names of persons on
;;;             a protected list (a privacy rule) as [name].
;;; Rules that stop fire after the redaction rule, so the last rail fact is the stop and its
;;; text is redacted too.

(deftemplate prompt (slot text (type STRING)))

(deftemplate completion
  (slot text (type STRING) (default ""))
  (slot delta (type STRING) (default ""))
  (slot tokens (type INTEGER) (default 0))
  (slot finished (default FALSE)))

(deftemplate rail
  (slot action (type SYMBOL) (allowed-symbols allow block rewrite stop))
  (slot text (type STRING) (default ""))
  (slot reason (type STRING) (default "")))

(deftemplate rail-policy
  (slot max-prompt-chars (type INTEGER) (default 400))
  (slot min-card-digits (type INTEGER) (default 13))
  (slot max-words (type INTEGER) (default 60))
  (slot max-violent-words (type INTEGER) (default 2)))

(deffacts rails-policy
  (rail-policy)
  (redacted-words "knave" "villain" "rogue" "whoreson" "bastard" "slave" "wretch" "varlet" "rascal" "cur")
  (protected-names "Romeo" "Juliet" "Richard" "Edward" "Clarence" "Warwick" "Henry" "Gloucester" "Buckingham"
                   "Margaret" "Hastings" "Angelo" "Lucio" "Isabella" "Kate" "Katharina" "Petruchio" "Coriolanus"
                   "Marcius" "Menenius" "Bolingbroke" "York" "Lancaster" "Tybalt" "Mercutio")
  (violent-words "kill" "murder" "blood" "slay" "slain" "stab" "dagger" "poison" "death" "dead" "die" "sword" "grave"))

;;; ---- string helpers ----------------------------------------------------------------------

(deffunction letter-p (?c)
  (if (str-index (lowcase ?c) "abcdefghijklmnopqrstuvwxyz'") then TRUE else FALSE))

(deffunction whole-word-at (?s ?start ?len)
  "TRUE when the ?len characters of ?s at ?start are not part of a longer word."
  (bind ?before (if (> ?start 1) then (sub-string (- ?start 1) (- ?start 1) ?s) else " "))
  (bind ?end (+ ?start ?len))
  (bind ?after (if (<= ?end (str-length ?s)) then (sub-string ?end ?end ?s) else " "))
  (and (not (letter-p ?before)) (not (letter-p ?after))))

(deffunction redact-word (?s ?word ?replacement)
  "?s with every whole-word, case-insensitive occurrence of ?word replaced by ?replacement."
  (bind ?out "")
  (bind ?rest ?s)
  (bind ?word (lowcase ?word))
  (bind ?n (str-length ?word))
  (bind ?i (str-index ?word (lowcase ?rest)))
  (while ?i do
    (if (whole-word-at ?rest ?i ?n)
     then (bind ?out (str-cat ?out (sub-string 1 (- ?i 1) ?rest) ?replacement))
     else (bind ?out (str-cat ?out (sub-string 1 (+ ?i (- ?n 1)) ?rest))))
    (bind ?rest (sub-string (+ ?i ?n) (str-length ?rest) ?rest))
    (bind ?i (str-index ?word (lowcase ?rest))))
  (str-cat ?out ?rest))

(deffunction redact-all (?s ?replacement $?words)
  (foreach ?w ?words (bind ?s (redact-word ?s ?w ?replacement)))
  ?s)

(deffunction redactions (?s ?insults ?names)
  "?s with insults (a multifield) shown as [redacted] and protected names as [name]."
  (redact-all (redact-all ?s "[redacted]" ?insults) "[name]" ?names))

(deffunction count-word (?s ?word)
  "Whole-word, case-insensitive occurrences of ?word (and its plural or -ed/-ing forms) in ?s."
  (bind ?low (lowcase ?s))
  (bind ?word (lowcase ?word))
  (bind ?count 0)
  (bind ?n (str-length ?word))
  (bind ?i (str-index ?word ?low))
  (while ?i do
    (bind ?after-stem (+ ?i ?n))
    (bind ?len ?n)
    (foreach ?suffix (create$ "ing" "ed" "s" "")
      (bind ?m (str-length ?suffix))
      (if (and (= ?len ?n) (> ?m 0) (<= (+ ?after-stem ?m -1) (str-length ?low))
               (eq (sub-string ?after-stem (+ ?after-stem ?m -1) ?low) ?suffix))
       then (bind ?len (+ ?n ?m))))
    (if (whole-word-at ?low ?i ?len) then (bind ?count (+ ?count 1)))
    (bind ?low (sub-string (+ ?i ?n) (str-length ?low) ?low))
    (bind ?i (str-index ?word ?low)))
  ?count)

(deffunction count-all (?s $?words)
  (bind ?c 0)
  (foreach ?w ?words (bind ?c (+ ?c (count-word ?s ?w))))
  ?c)

(deffunction first-violent (?s $?words)
  (foreach ?w ?words (if (> (count-word ?s ?w) 0) then (return ?w)))
  "")

(deffunction word-count (?s)
  "Words in ?s: runs of characters other than spaces and newlines."
  (bind ?count 0)
  (bind ?in FALSE)
  (loop-for-count (?i 1 (str-length ?s))
    (bind ?c (sub-string ?i ?i ?s))
    (if (or (eq ?c " ") (eq ?c (format nil "%n")) (eq ?c "	"))
     then (bind ?in FALSE)
     else (if (not ?in) then (bind ?count (+ ?count 1)) (bind ?in TRUE))))
  ?count)

(deffunction first-words (?s ?n)
  "The prefix of ?s that ends with its ?n-th word (all of ?s when it has fewer words)."
  (bind ?count 0)
  (bind ?in FALSE)
  (bind ?end 0)
  (loop-for-count (?i 1 (str-length ?s))
    (bind ?c (sub-string ?i ?i ?s))
    (if (or (eq ?c " ") (eq ?c (format nil "%n")) (eq ?c "	"))
     then (bind ?in FALSE)
     else (if (not ?in)
           then (if (>= ?count ?n) then (return (sub-string 1 ?end ?s)))
                (bind ?count (+ ?count 1))
                (bind ?in TRUE))
          (bind ?end ?i)))
  ?s)

(deffunction speaker-line-p (?line)
  "TRUE for a speaker heading such as \"KING RICHARD III:\" (upper case, ends with a colon)."
  (bind ?t (str-cat ?line))
  (and (> (str-length ?t) 2)
       (eq (sub-string (str-length ?t) (str-length ?t) ?t) ":")
       (eq (upcase ?t) ?t)
       (neq (lowcase ?t) ?t)))

(deffunction before-new-speaker (?text ?delta)
  "The part of ?delta before a speaker heading that starts a line after the first line of
   ?text (the whole answer so far); the whole ?delta when there is none."
  (bind ?nl (format nil "%n"))
  (bind ?prefix-len (- (str-length ?text) (str-length ?delta)))
  (bind ?pos 1)
  (bind ?line-start 1)
  (bind ?n (str-length ?text))
  (while (<= ?pos (+ ?n 1)) do
    (if (or (> ?pos ?n) (eq (sub-string ?pos ?pos ?text) ?nl))
     then (bind ?line (sub-string ?line-start (- ?pos 1) ?text))
          (if (and (> ?line-start 1) (speaker-line-p ?line))
           then (return (sub-string 1 (max 0 (- ?line-start ?prefix-len 1)) ?delta)))
          (bind ?line-start (+ ?pos 1)))
    (bind ?pos (+ ?pos 1)))
  ?delta)

(deffunction has-new-speaker (?text)
  (neq (before-new-speaker ?text ?text) ?text))

;;; ---- input rails --------------------------------------------------------------------------

(deffunction longest-digit-run (?text)
  "Most digits in a row in ?text; a space or dash between two digits does not break the run."
  (bind ?best 0)
  (bind ?run 0)
  (loop-for-count (?i 1 (str-length ?text))
    (bind ?c (sub-string ?i ?i ?text))
    (if (str-index ?c "0123456789")
     then (bind ?run (+ ?run 1))
          (if (> ?run ?best) then (bind ?best ?run))
     else (if (and (neq ?c " ") (neq ?c "-")) then (bind ?run 0))))
  ?best)

(defrule block-card-number
  (rail-policy (min-card-digits ?min) (max-prompt-chars ?max))
  ; an over-long prompt is blocked unscanned (the scan is per character)
  (prompt (text ?t&:(<= (str-length ?t) ?max)&:(>= (longest-digit-run ?t) ?min)))
  (not (rail))
  =>
  (assert (rail (action block) (text "I cannot take card numbers; please remove it and ask again.")
                (reason "input: the prompt contains a payment card number"))))

(defrule block-email-address
  (prompt (text ?t))
  (test (and (str-index "@" ?t) (str-index "." (sub-string (str-index "@" ?t) (str-length ?t) ?t))))
  (not (rail))
  =>
  (assert (rail (action block) (text "I cannot take e-mail addresses; please remove it and ask again.")
                (reason "input: the prompt contains an e-mail address"))))

(defrule block-long-prompt
  (rail-policy (max-prompt-chars ?max))
  (prompt (text ?t&:(> (str-length ?t) ?max)))
  (not (rail))
  =>
  (assert (rail (action block) (text (str-cat "Please keep prompts under " ?max " characters."))
                (reason (str-cat "input: " (str-length ?t) " characters > " ?max)))))

;;; ---- output rails -------------------------------------------------------------------------

(defrule redact-insults-and-names
  (declare (salience 30))
  (completion (delta ?d))
  (redacted-words $?words)
  (protected-names $?names)
  (test (neq (redactions ?d ?words ?names) ?d))
  =>
  (assert (rail (action rewrite) (text (redactions ?d ?words ?names))
                (reason (if (neq (redact-all ?d "" ?words) ?d) then "redact: insult" else "redact: protected name")))))

(defrule stop-at-new-speaker
  "One speech per answer: a line naming the next speaker ends it."
  (declare (salience 20))
  (completion (text ?t&:(has-new-speaker ?t)) (delta ?d))
  (redacted-words $?words)
  (protected-names $?names)
  (not (rail (action stop)))
  =>
  (assert (rail (action stop) (text (redactions (before-new-speaker ?t ?d) ?words ?names))
                (reason "speaker: a new speaker begins"))))

(defrule stop-violent-content
  (declare (salience 15))
  (rail-policy (max-violent-words ?max))
  (violent-words $?violent)
  (completion (text ?t&:(>= (count-all ?t ?violent) ?max)))
  (not (rail (action stop)))
  =>
  (assert (rail (action stop) (text " [stopped: content policy]")
                (reason (str-cat "content: " (count-all ?t ?violent) " violent words (first: "
                                 (first-violent ?t ?violent) ")")))))

(defrule stop-at-length
  (declare (salience 10))
  (rail-policy (max-words ?max))
  (completion (text ?t&:(> (word-count ?t) ?max)) (delta ?d))
  (redacted-words $?words)
  (protected-names $?names)
  (not (rail (action stop)))
  =>
  (bind ?shown (- (word-count ?t) (word-count ?d)))
  (bind ?head (redactions (first-words ?d (max 0 (- ?max ?shown))) ?words ?names))
  (assert (rail (action stop)
                (text (if (eq ?head "") then "..." else (str-cat ?head " ...")))
                (reason (str-cat "length: more than " ?max " words")))))
