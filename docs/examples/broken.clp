; A rule file with mistakes: `workbench kb check` reports each with its line and column.
(deftemplate order (slot id (type INTEGER)) (slot total (type FLOAT)))

(defrule big-order
   (order (id ?id) (totl ?t&:(> ?t 1000)))
   =>
   (assert (review ?id)))

(defrule small-order
   (order (id ?id) (total "cheap"))
   =>
   (assert (fast-track ?id)))
