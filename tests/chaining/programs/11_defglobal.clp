;;; defglobals as counters and thresholds.
(defglobal ?*count* = 0 ?*threshold* = 3)
(defglobal ?*label* = "counter")

(deffacts ticks (tick 1) (tick 2) (tick 3) (tick 4) (tick 5))

(defrule count
  (tick ?n)
  =>
  (bind ?*count* (+ ?*count* 1))
  (if (>= ?*count* ?*threshold*) then (printout t ?*label* " reached " ?*count* " at tick " ?n crlf)))

(defrule final
  (declare (salience -1))
  =>
  (printout t "total " ?*count* crlf))
