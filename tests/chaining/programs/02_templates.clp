;;; Templates with defaults, types, multislots; modify and duplicate.
(deftemplate item
  (slot name (type SYMBOL))
  (slot price (type NUMBER) (default 0))
  (slot qty (type INTEGER) (default 1))
  (multislot tags)
  (slot status (allowed-symbols new priced shipped) (default new)))

(deffacts stock
  (item (name pen) (price 1.5) (qty 10) (tags office cheap))
  (item (name lamp) (price 30) (tags home))
  (item (name desk)))

(defrule price-missing
  ?i <- (item (name ?n) (price 0) (status new))
  =>
  (modify ?i (price 100) (status priced))
  (printout t "priced " ?n crlf))

(defrule mark-priced
  ?i <- (item (name ?n) (price ?p&~0) (status new))
  =>
  (modify ?i (status priced))
  (printout t ?n " costs " ?p crlf))

(defrule clone-cheap
  (item (name pen) (status priced) (qty ?q&:(> ?q 5)))
  ?i <- (item (name pen))
  (not (item (name pen-refill)))
  =>
  (duplicate ?i (name pen-refill) (qty 1) (tags refill))
  (printout t "duplicated pen" crlf))

(defrule total
  (declare (salience -10))
  =>
  (bind ?sum 0)
  (do-for-all-facts ((?f item)) TRUE
    (bind ?sum (+ ?sum (* ?f:price ?f:qty))))
  (printout t "stock value " ?sum crlf))
