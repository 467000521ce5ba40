;;; demo_intents_facts.clp -- templates shared by the text demo's knowledge bases.
;;; The input node asserts one `request`; the intent router (all-MiniLM-L6-v2 embedding, then a
;;; k-nearest-neighbour vote over labelled examples) asserts one `intent-score` per intent.

(deftemplate request "a free-text customer request"
  (slot id (type STRING SYMBOL) (default "anonymous"))
  (slot text (type STRING))
  (slot length (type INTEGER)))              ; characters

(deftemplate route "the input gate's decision: which branch of the pipeline runs"
  (slot branch (type SYMBOL) (allowed-symbols classify refuse))
  (slot reason (type STRING) (default "")))

(deftemplate intent-score "the router's similarity evidence for one intent"
  (slot intent (type SYMBOL))
  (slot score (type FLOAT))                  ; mean cosine similarity of the k nearest examples
  (slot example (type INTEGER))              ; id of the single nearest example of this intent
  (slot example-score (type FLOAT)))         ; its cosine similarity
