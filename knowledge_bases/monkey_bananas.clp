;;; Monkey and bananas: goal-directed planning by forward chaining. A hungry monkey must
;;; eat bananas hanging from the ceiling; it may jump off furniture, walk, push light
;;; objects, climb, and grab. Each goal posts the subgoal that unblocks it; a goal is
;;; retracted when an action achieves it. The plan is printed step by step.
;;;
;;; The initial situation is the deffacts below; other situations can be given as facts
;;; after replacing them (see tests/chaining/forward/test_knowledge_bases.py).

(deftemplate monkey
  (slot location (type SYMBOL))
  (slot on-top-of (type SYMBOL) (default floor))
  (slot holding (type SYMBOL) (default nothing)))

(deftemplate thing
  (slot name (type SYMBOL))
  (slot location (type SYMBOL))
  (slot on-top-of (type SYMBOL) (default floor))
  (slot weight (allowed-values light heavy) (default light)))

(deftemplate goal
  (slot action (allowed-values eat hold move-to walk-to on))
  (slot object (type SYMBOL) (default none))
  (slot to (type SYMBOL) (default none)))

(deffacts situation
  (monkey (location t5-7) (on-top-of green-couch))
  (thing (name green-couch) (location t5-7) (weight heavy))
  (thing (name ladder) (location t7-7))
  (thing (name bananas) (location t2-2) (on-top-of ceiling))
  (goal (action eat) (object bananas)))

;; --- eating and holding ------------------------------------------------------------

(defrule eat
  ?g <- (goal (action eat) (object ?obj))
  ?m <- (monkey (holding ?obj&~nothing))
  =>
  (retract ?g)
  (modify ?m (holding nothing))
  (printout t "Monkey eats the " ?obj "." crlf))

(defrule eat-needs-hold
  (goal (action eat) (object ?obj))
  (monkey (holding ~?obj))
  (not (goal (action hold) (object ?obj)))
  =>
  (assert (goal (action hold) (object ?obj))))

(defrule grab-from-ceiling
  ?g <- (goal (action hold) (object ?obj))
  (thing (name ?obj) (location ?loc) (on-top-of ceiling))
  (thing (name ?support) (location ?loc))
  ?m <- (monkey (location ?loc) (on-top-of ?support) (holding nothing))
  =>
  (retract ?g)
  (modify ?m (holding ?obj))
  (printout t "Monkey grabs the " ?obj " standing on the " ?support "." crlf))

(defrule hold-needs-climb
  (goal (action hold) (object ?obj))
  (thing (name ?obj) (location ?loc) (on-top-of ceiling))
  (thing (name ?support&~?obj) (location ?loc) (weight light) (on-top-of floor))
  (monkey (on-top-of ~?support))
  (not (goal (action on)))
  =>
  (assert (goal (action on) (object ?support))))

(defrule hold-needs-support-moved
  (goal (action hold) (object ?obj))
  (thing (name ?obj) (location ?loc) (on-top-of ceiling))
  (not (thing (location ?loc) (weight light) (on-top-of floor)))
  (thing (name ?support) (weight light) (on-top-of floor) (location ~?loc))
  (not (goal (action move-to) (object ?support)))
  =>
  (assert (goal (action move-to) (object ?support) (to ?loc))))

;; --- climbing ------------------------------------------------------------------------

(defrule climb
  ?g <- (goal (action on) (object ?support))
  (thing (name ?support) (location ?loc))
  ?m <- (monkey (location ?loc) (on-top-of floor))
  =>
  (retract ?g)
  (modify ?m (on-top-of ?support))
  (printout t "Monkey climbs onto the " ?support "." crlf))

(defrule climb-needs-walk
  (goal (action on) (object ?support))
  (thing (name ?support) (location ?loc))
  (monkey (location ~?loc))
  (not (goal (action walk-to)))
  =>
  (assert (goal (action walk-to) (to ?loc))))

;; --- pushing ---------------------------------------------------------------------------

(defrule push
  ?g <- (goal (action move-to) (object ?obj) (to ?to))
  ?t <- (thing (name ?obj) (location ?from) (weight light))
  ?m <- (monkey (location ?from) (on-top-of floor) (holding nothing))
  =>
  (retract ?g)
  (modify ?t (location ?to))
  (modify ?m (location ?to))
  (printout t "Monkey pushes the " ?obj " from " ?from " to " ?to "." crlf))

(defrule push-needs-walk
  (goal (action move-to) (object ?obj))
  (thing (name ?obj) (location ?from))
  (monkey (location ~?from))
  (not (goal (action walk-to)))
  =>
  (assert (goal (action walk-to) (to ?from))))

;; --- walking ---------------------------------------------------------------------------

(defrule jump-down
  (declare (salience 10))
  (goal (action walk-to))
  ?m <- (monkey (on-top-of ?on&~floor))
  =>
  (modify ?m (on-top-of floor))
  (printout t "Monkey jumps off the " ?on " onto the floor." crlf))

(defrule walk
  ?g <- (goal (action walk-to) (to ?to))
  ?m <- (monkey (location ?from&~?to) (on-top-of floor))
  =>
  (retract ?g)
  (modify ?m (location ?to))
  (printout t "Monkey walks from " ?from " to " ?to "." crlf))

(defrule already-there
  ?g <- (goal (action walk-to) (to ?to))
  (monkey (location ?to) (on-top-of floor))
  =>
  (retract ?g))

;; --- impossible --------------------------------------------------------------------------

(defrule no-plan
  (declare (salience -100))
  (goal (action ?a) (object ?o))
  =>
  (printout t "No plan found for goal " ?a " " ?o "." crlf))
