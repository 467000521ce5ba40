;;; Miss Manners: seat guests around a table so that neighbours alternate in sex and share
;;; a hobby. Written for Workbench from the published description of the OPS5 benchmark
;;; (Brant, Grose, Lofaso and Miranker, "Effects of Database Size on Rule System
;;; Performance: Five Case Studies", VLDB 1991): depth-first search that extends the latest
;;; seating by one guest, copies the path of seated guests to the new seating, and checks
;;; whether the last seat is filled. Guests, hobbies and the seat count are input facts.

(deftemplate guest (slot name) (slot sex) (slot hobby))
(deftemplate last-seat (slot seat))
(deftemplate seating
  (slot seat1) (slot name1) (slot name2) (slot seat2)
  (slot id) (slot pid) (slot path-done))
(deftemplate context (slot state))
(deftemplate path (slot id) (slot name) (slot seat))
(deftemplate chosen (slot id) (slot name) (slot hobby))
(deftemplate count (slot c))

(deffacts manners-start
  (context (state start))
  (count (c 1)))

(defrule assign-first-seat
  ?ctx <- (context (state start))
  (guest (name ?n))
  ?cnt <- (count (c ?c))
  =>
  (assert (seating (seat1 1) (name1 ?n) (name2 ?n) (seat2 1) (id ?c) (pid 0) (path-done yes)))
  (assert (path (id ?c) (name ?n) (seat 1)))
  (modify ?cnt (c (+ ?c 1)))
  (printout t "seat 1 " ?n " " ?n " 1 " ?c " 0 1" crlf)
  (modify ?ctx (state assign-seats)))

(defrule find-seating
  ?ctx <- (context (state assign-seats))
  (seating (seat1 ?seat1) (seat2 ?seat2) (name2 ?n2) (id ?id) (pid ?pid) (path-done yes))
  (guest (name ?n2) (sex ?s1) (hobby ?h1))
  (guest (name ?g2) (sex ~?s1) (hobby ?h1))
  ?cnt <- (count (c ?c))
  (not (path (id ?id) (name ?g2)))
  (not (chosen (id ?id) (name ?g2) (hobby ?h1)))
  =>
  (assert (seating (seat1 ?seat2) (name1 ?n2) (name2 ?g2) (seat2 (+ ?seat2 1))
                   (id ?c) (pid ?id) (path-done no)))
  (assert (path (id ?c) (name ?g2) (seat (+ ?seat2 1))))
  (assert (chosen (id ?id) (name ?g2) (hobby ?h1)))
  (modify ?cnt (c (+ ?c 1)))
  (printout t "seat " ?seat2 " " ?n2 " " ?g2 crlf)
  (modify ?ctx (state make-path)))

(defrule make-path
  (context (state make-path))
  (seating (id ?id) (pid ?pid) (path-done no))
  (path (id ?pid) (name ?n1) (seat ?s))
  (not (path (id ?id) (name ?n1)))
  =>
  (assert (path (id ?id) (name ?n1) (seat ?s))))

(defrule path-done
  (declare (salience -1))
  ?ctx <- (context (state make-path))
  ?s <- (seating (path-done no))
  =>
  (modify ?s (path-done yes))
  (modify ?ctx (state check-done)))

(defrule are-we-done
  ?ctx <- (context (state check-done))
  (last-seat (seat ?l))
  (seating (seat2 ?l))
  =>
  (printout t crlf "Yes, we are done!!" crlf)
  (modify ?ctx (state print-results)))

(defrule continue
  (declare (salience -1))
  ?ctx <- (context (state check-done))
  =>
  (modify ?ctx (state assign-seats)))

(defrule print-results
  (context (state print-results))
  (seating (id ?id) (seat2 ?s2))
  (last-seat (seat ?s2))
  ?p <- (path (id ?id) (name ?n) (seat ?s))
  =>
  (retract ?p)
  (printout t ?n " " ?s crlf))

(defrule all-done
  (declare (salience -1))
  (context (state print-results))
  =>
  (halt))
