;;; defmodule with import/export, focus and auto-focus.
(defmodule MAIN (export deftemplate order))
(deftemplate order (slot id) (slot amount))
(deffacts orders (order (id 1) (amount 50)) (order (id 2) (amount 500)))

(defrule start
  =>
  (printout t "main starts" crlf)
  (focus CHECK REPORT))

(defmodule CHECK (import MAIN deftemplate order) (export deftemplate flag))
(deftemplate flag (slot id))
(defrule big-order
  (order (id ?i) (amount ?a&:(> ?a 100)))
  =>
  (assert (flag (id ?i)))
  (printout t "check: flag order " ?i crlf))

(defmodule REPORT (import CHECK deftemplate flag) (import MAIN deftemplate order))
(defrule report
  (flag (id ?i))
  (order (id ?i) (amount ?a))
  =>
  (printout t "report: order " ?i " amount " ?a crlf))

(defmodule AUDIT (import MAIN deftemplate order))
(defrule audit
  (declare (auto-focus TRUE))
  (order (id ?i))
  =>
  (printout t "audit sees order " ?i crlf))
