; A neural predicate: the sentiment of a review is asked of a model, in batches.
;@askable slot=label
(deftemplate sentiment "a model's reading of a text"
   (slot text (type STRING))
   (slot label (allowed-symbols positive negative neutral)))

(defrule recommend-on-positive-review
   (review ?id ?text)
   (sentiment (text ?text) (label positive))
   =>
   (assert (recommend ?id)))
