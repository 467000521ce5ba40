; facts: [{"template": "order", "slots": {"id": 7, "items": ["pen", "ink"], "customer": "acme", "total": 12.5}}, {"template": "order", "slots": {"id": 8, "items": [], "customer": "zeta", "total": 0}}, {"template": "vip", "values": ["acme", 3]}]
;;; Facts given as data (JSON) next to facts from deffacts.
(deftemplate order (slot id) (multislot items) (slot customer) (slot total (default 0)))
(deffacts known (vip globex 1))

(defrule vip-order
  (order (id ?i) (customer ?c) (items $?its))
  (vip ?c ?level)
  =>
  (printout t "vip order " ?i " level " ?level " items " (length$ ?its) crlf))

(defrule empty-order
  ?o <- (order (id ?i) (items))
  =>
  (retract ?o)
  (printout t "dropped empty order " ?i crlf))

(defrule totals
  (declare (salience -1))
  (order (id ?i) (total ?t&:(> ?t 10)))
  =>
  (printout t "large order " ?i " " ?t crlf))
