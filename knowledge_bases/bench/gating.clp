;;; Gating: the per-request rule set of a pipeline gate (10 rules). Five facts come in per
;;; request (request, prediction, user, limits, clock); the rules decide whether the
;;; downstream model call runs (gate open) and why.

(deftemplate request (slot id) (slot channel) (slot length))
(deftemplate prediction (slot label) (slot score))
(deftemplate user (slot tier) (slot strikes))
(deftemplate limits (slot min-score) (slot max-length))
(deftemplate clock (slot hour))
(deftemplate decision (slot action) (slot reason))
(deftemplate gate (slot open))

(defrule low-confidence
  (prediction (score ?s))
  (limits (min-score ?m&:(< ?s ?m)))
  =>
  (assert (decision (action review) (reason low-confidence))))

(defrule spam
  (prediction (label spam) (score ?s&:(>= ?s 0.9)))
  =>
  (assert (decision (action block) (reason spam))))

(defrule too-long
  (request (length ?n))
  (limits (max-length ?m&:(> ?n ?m)))
  =>
  (assert (decision (action truncate) (reason too-long))))

(defrule repeat-offender
  (user (strikes ?k&:(>= ?k 3)))
  =>
  (assert (decision (action block) (reason abuse))))

(defrule vip
  (user (tier gold))
  (not (decision (action block)))
  =>
  (assert (decision (action fast-lane) (reason vip))))

(defrule night-email
  (clock (hour ?h&:(< ?h 6)))
  (request (channel email))
  =>
  (assert (decision (action defer) (reason night))))

(defrule api-ham
  (request (channel api))
  (prediction (label ham))
  =>
  (assert (decision (action allow) (reason api))))

(defrule block-wins
  (declare (salience 10))
  (decision (action block))
  ?d <- (decision (action fast-lane|allow))
  =>
  (retract ?d))

(defrule default-allow
  (declare (salience -10))
  (not (decision))
  =>
  (assert (decision (action allow) (reason default))))

(defrule close-gate
  (declare (salience -20))
  (exists (decision (action block|review|defer)))
  =>
  (assert (gate (open no))))
