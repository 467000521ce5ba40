;;; not, exists, forall.
(deftemplate task (slot name) (slot done (default no)))
(deftemplate worker (slot name) (slot task))
(deffacts work
  (task (name a) (done yes)) (task (name b)) (task (name c) (done yes))
  (worker (name w1) (task b)) (worker (name w2) (task b)))

(defrule some-open
  (exists (task (done no)))
  =>
  (printout t "there is open work" crlf))

(defrule nobody-on
  (task (name ?t) (done no))
  (not (worker (task ?t)))
  =>
  (printout t "nobody works on " ?t crlf))

(defrule all-staffed
  (forall (task (name ?t) (done no))
          (worker (task ?t)))
  =>
  (printout t "every open task is staffed" crlf))

(defrule finish
  (declare (salience -5))
  ?t <- (task (name ?n) (done no))
  =>
  (modify ?t (done yes))
  (printout t "finished " ?n crlf))

(defrule all-done
  (declare (salience -10))
  (forall (task) (task (done yes)))
  =>
  (printout t "all done" crlf))
