;;; Miss Manners, the OPS5 benchmark suite's rule set (Brant, Grose, Lofaso, Miranker,
;;; "Effects of Database Size on Rule System Performance: Five Case Studies", VLDB 1991) with
;;; the names and facts of the published data sets (manners16/32/64/128.fct as CLIPS's
;;; examples distribute them: guest, last_seat, count and context facts, loaded after reset).
;;; Rewritten for Workbench; same rules, same firings. Output goes to ?*output* (nil: none),
;;; as in the published CLIPS version, so that printing is not what is measured.
;;;
;;; Depth-first search: extend the newest seating by one guest of the other sex who shares a
;;; hobby with the last seated guest and is not on the path yet, copy the path, check whether
;;; the last seat is reached.

(defglobal ?*output* = nil)

(deftemplate guest (slot name) (slot sex) (slot hobby))
(deftemplate last_seat (slot seat))
(deftemplate seating
   (slot seat1) (slot name1) (slot name2) (slot seat2) (slot id) (slot pid) (slot path_done))
(deftemplate context (slot state))
(deftemplate path (slot id) (slot name) (slot seat))
(deftemplate chosen (slot id) (slot name) (slot hobby))
(deftemplate count (slot c))

(defrule assign_first_seat
   ?ctx <- (context (state start))
   (guest (name ?n))
   ?cnt <- (count (c ?c))
   =>
   (assert (seating (seat1 1) (name1 ?n) (name2 ?n) (seat2 1) (id ?c) (pid 0) (path_done yes)))
   (assert (path (id ?c) (name ?n) (seat 1)))
   (modify ?cnt (c (+ ?c 1)))
   (printout ?*output* "seat 1 " ?n " " ?n " 1 " ?c " 0 1" crlf)
   (modify ?ctx (state assign_seats)))

(defrule find_seating
   ?ctx <- (context (state assign_seats))
   (seating (seat1 ?seat1) (seat2 ?seat2) (name2 ?n2) (id ?id) (pid ?pid) (path_done yes))
   (guest (name ?n2) (sex ?s1) (hobby ?h1))
   (guest (name ?g2) (sex ~?s1) (hobby ?h1))
   ?cnt <- (count (c ?c))
   (not (path (id ?id) (name ?g2)))
   (not (chosen (id ?id) (name ?g2) (hobby ?h1)))
   =>
   (assert (seating (seat1 ?seat2) (name1 ?n2) (name2 ?g2) (seat2 (+ ?seat2 1)) (id ?c) (pid ?id)
                    (path_done no)))
   (assert (path (id ?c) (name ?g2) (seat (+ ?seat2 1))))
   (assert (chosen (id ?id) (name ?g2) (hobby ?h1)))
   (modify ?cnt (c (+ ?c 1)))
   (printout ?*output* seat " " ?seat2 " " ?n2 " " ?g2 crlf)
   (modify ?ctx (state make_path)))

(defrule make_path
   (context (state make_path))
   (seating (id ?id) (pid ?pid) (path_done no))
   (path (id ?pid) (name ?n1) (seat ?s))
   (not (path (id ?id) (name ?n1)))
   =>
   (assert (path (id ?id) (name ?n1) (seat ?s))))

(defrule path_done
   ?ctx <- (context (state make_path))
   ?seating <- (seating (path_done no))
   =>
   (modify ?seating (path_done yes))
   (modify ?ctx (state check_done)))

(defrule are_we_done
   ?ctx <- (context (state check_done))
   (last_seat (seat ?last))
   (seating (seat2 ?last))
   =>
   (printout ?*output* crlf "Yes, we are done!!" crlf)
   (modify ?ctx (state print_results)))

(defrule continue
   ?ctx <- (context (state check_done))
   =>
   (modify ?ctx (state assign_seats)))

(defrule print_results
   (context (state print_results))
   (seating (id ?id) (seat2 ?s2))
   (last_seat (seat ?s2))
   ?p <- (path (id ?id) (name ?n) (seat ?s))
   =>
   (retract ?p)
   (printout ?*output* ?n " " ?s crlf))

(defrule all_done
   (context (state print_results))
   =>
   (halt))
