;;; demo_intents_policy.clp -- policy over the intent router's similarity evidence.
;;;  1. rank the intents by similarity (top intent, runner-up, margin);
;;;  2. override the model where the words of the request settle it: a report of theft or of
;;;     payments the customer did not make is fraud, whatever it resembles; a legal threat is a
;;;     complaint;
;;;  3. gate: too little similarity to any labelled example, or two intents too close, means
;;;     the request is not understood -- ask the customer to rephrase (clarify);
;;;  4. policy: refuse requests about another person's account (privacy), escalate fraud
;;;     (urgent), account closure (retention team) and legal threats (complaints team); answer
;;;     the rest through the self-service flow of the intent;
;;;  5. conclude one (decision ...) with its (evidence ...): the nearest labelled example.

(deftemplate intent-policy
  (slot min-similarity (type FLOAT) (default 0.35))
  (slot min-margin (type FLOAT) (default 0.02)))

(deffacts intents-policy (intent-policy))

(deftemplate keyword "words that settle an intent whatever the embedding says"
  (slot category (type SYMBOL)) (slot word (type STRING)))

(deffacts policy-keywords
  (keyword (category fraud) (word "stolen"))        (keyword (category fraud) (word "fraud"))
  (keyword (category fraud) (word "scam"))          (keyword (category fraud) (word "unauthorised"))
  (keyword (category fraud) (word "unauthorized"))  (keyword (category fraud) (word "didn't make"))
  (keyword (category fraud) (word "did not make"))  (keyword (category fraud) (word "don't recognise"))
  (keyword (category fraud) (word "don't recognize")) (keyword (category fraud) (word "never authorised"))
  (keyword (category legal) (word "lawyer"))        (keyword (category legal) (word "solicitor"))
  (keyword (category legal) (word "ombudsman"))     (keyword (category legal) (word "sue "))
  (keyword (category legal) (word "legal action"))  (keyword (category legal) (word "regulator")))

(deftemplate keyword-hit (slot category (type SYMBOL)) (slot word (type STRING)))

(deftemplate ranking "the router's top intent and its runner-up"
  (slot intent (type SYMBOL)) (slot score (type FLOAT))
  (slot runner-up (type SYMBOL)) (slot runner-up-score (type FLOAT))
  (slot margin (type FLOAT)))

(deftemplate intent-choice "the intent the policy acts on"
  (slot intent (type SYMBOL))
  (slot source (type SYMBOL) (allowed-symbols model rule)))

(deftemplate override "a rule replaced the model's intent"
  (slot was (type SYMBOL)) (slot now (type SYMBOL)) (slot word (type STRING)))

(deftemplate evidence "the nearest labelled example of the chosen intent"
  (slot intent (type SYMBOL)) (slot score (type FLOAT))
  (slot example (type INTEGER)) (slot similarity (type FLOAT)) (slot text (type STRING)))

(deftemplate decision
  (slot action (type SYMBOL) (allowed-symbols answer escalate refuse clarify))
  (slot intent (type SYMBOL) (default none))
  (slot queue (type SYMBOL) (default none))            ; self-service | fraud | retention | complaints | none
  (slot priority (type SYMBOL) (default normal))
  (slot reason (type STRING) (default "")))

;;; 1. ranking and keywords

(defrule rank-intents
  (declare (salience 50))
  (intent-score (intent ?i) (score ?s))
  (not (intent-score (score ?o&:(> ?o ?s))))
  (intent-score (intent ?j&~?i) (score ?s2))
  (not (intent-score (intent ~?i) (score ?o2&:(> ?o2 ?s2))))
  (not (ranking))
  =>
  (assert (ranking (intent ?i) (score ?s) (runner-up ?j) (runner-up-score ?s2) (margin (- ?s ?s2)))))

(defrule spot-keyword
  (declare (salience 50))
  (request (text ?t))
  (keyword (category ?c) (word ?w))
  (test (str-index ?w (lowcase ?t)))
  =>
  (assert (keyword-hit (category ?c) (word ?w))))

;;; 2. overrides

(defrule override-to-fraud
  "Theft or payments the customer did not make are fraud, even when worded like a lost card."
  (declare (salience 40))
  (ranking (intent ?i&~fraud_report))
  (keyword-hit (category fraud) (word ?w))
  (not (intent-choice))
  =>
  (assert (override (was ?i) (now fraud_report) (word ?w)))
  (assert (intent-choice (intent fraud_report) (source rule))))

(defrule override-to-complaint
  "A legal threat is a complaint for the complaints team, whatever it resembles."
  (declare (salience 39))
  (ranking (intent ?i&~complaint))
  (keyword-hit (category legal) (word ?w))
  (not (keyword-hit (category fraud)))
  (not (intent-choice))
  =>
  (assert (override (was ?i) (now complaint) (word ?w)))
  (assert (intent-choice (intent complaint) (source rule))))

(defrule take-model-intent
  (declare (salience 30))
  (ranking (intent ?i))
  (not (intent-choice))
  =>
  (assert (intent-choice (intent ?i) (source model))))

(defrule cite-evidence
  (declare (salience 30))
  (intent-choice (intent ?i))
  (intent-score (intent ?i) (score ?s) (example ?id) (example-score ?sim))
  =>
  (assert (evidence (intent ?i) (score ?s) (example ?id) (similarity ?sim) (text (example-text ?id)))))

;;; 3. not understood: ask again (unless the request's own words settled the intent)

(defrule clarify-low-similarity
  (declare (salience 20))
  (intent-policy (min-similarity ?min))
  (intent-choice (source model))
  (not (keyword-hit))
  (ranking (intent ?i) (score ?s&:(< ?s ?min)))
  (not (decision))
  =>
  (assert (decision (action clarify) (intent ?i)
                    (reason (str-cat "nothing like it among the labelled examples: best similarity "
                                     ?s " (" ?i ") < " ?min)))))

(defrule clarify-ambiguous
  (declare (salience 20))
  (intent-policy (min-margin ?m))
  (intent-choice (source model))
  (not (keyword-hit))
  (ranking (intent ?i) (runner-up ?j) (margin ?d&:(< ?d ?m)))
  (not (decision))
  =>
  (assert (decision (action clarify) (intent ?i)
                    (reason (str-cat ?i " and " ?j " are equally likely (margin " ?d " < " ?m ")")))))

;;; 4. policy

(defrule refuse-third-party
  (declare (salience 10))
  (intent-choice (intent third_party_request))
  (not (decision))
  =>
  (assert (decision (action refuse) (intent third_party_request)
                    (reason "information about another person's account is only given to its holder"))))

(defrule escalate-fraud
  (declare (salience 10))
  (intent-choice (intent fraud_report))
  (not (decision))
  =>
  (assert (decision (action escalate) (intent fraud_report) (queue fraud) (priority urgent)
                    (reason "possible fraud: the card is blocked and the fraud team calls back"))))

(defrule escalate-account-closure
  (declare (salience 10))
  (intent-choice (intent close_account))
  (not (decision))
  =>
  (assert (decision (action escalate) (intent close_account) (queue retention)
                    (reason "account closure is handled by a person"))))

(defrule escalate-legal-threat
  (declare (salience 10))
  (intent-choice (intent complaint))
  (keyword-hit (category legal) (word ?w))
  (not (decision))
  =>
  (assert (decision (action escalate) (intent complaint) (queue complaints) (priority high)
                    (reason (str-cat "legal threat (\"" ?w "\"): the complaints team takes over")))))

(defrule answer-self-service
  (declare (salience -10))
  (intent-choice (intent ?i))
  (not (decision))
  =>
  (assert (decision (action answer) (intent ?i) (queue self-service)
                    (reason (str-cat "self-service flow for " ?i)))))
