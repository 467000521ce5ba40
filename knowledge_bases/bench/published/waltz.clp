;;; Waltz line labelling, the OPS5 benchmark suite's rule set (Satoshi Nishiyama, University of
;;; Texas at Austin, 1991; Brant et al., VLDB 1991) with the facts of the published data sets
;;; (waltz12/25/37/50.fct as CLIPS's examples distribute them: a stage fact and `line` facts
;;; whose points are x * 10000 + y, loaded after reset). Rewritten for Workbench; same rules and
;;; functions, same firings. The benchmark's C functions are deffunctions here, as in CLIPS's
;;; version; its own atan2 deffunction is left out: CLIPS 6.4 has atan2 built in and skips a
;;; deffunction of that name ([DFFNXPSR2]), so the built-in is what the published program runs.
;;;
;;; Stages: duplicate (each line becomes two directed edges), detect_junctions (3 edges at a
;;; point: arrow/fork/tee by their angles; 2 edges: L), find_initial_boundary and
;;; find_second_boundary (the junctions with the largest and the smallest base point start the
;;; labelling), labeling (propagate +, -, B labels through the junction catalogue),
;;; plot_remaining_edges, done.

(deftemplate stage (slot value))
(deftemplate line (slot p1) (slot p2))
(deftemplate edge (slot p1) (slot p2) (slot joined) (slot label) (slot plotted))
(deftemplate junction (slot p1) (slot p2) (slot p3) (slot base_point) (slot type))

(defglobal ?*MOD-NUM* = 100)

(deffunction get-y (?val) (mod ?val ?*MOD-NUM*))

(deffunction get-x (?val) (integer (/ ?val ?*MOD-NUM*)))

(deffunction get-angle (?p1 ?p2)
   "Direction of the line from ?p1 to ?p2, radians."
   (bind ?dx (- (get-x ?p2) (get-x ?p1)))
   (bind ?dy (- (get-y ?p2) (get-y ?p1)))
   (if (= ?dx 0)
      then (if (> ?dy 0) then (return (/ (pi) 2))
            else (if (< ?dy 0) then (return (/ (pi) -2))))
      else (if (= ?dy 0)
              then (if (> ?dx 0) then (return 0.0)
                    else (if (< ?dx 0) then (return (pi))))
              else (return (atan2 ?dy ?dx)))))

(deffunction inscribed-angle (?basepoint ?p1 ?p2)
   "The smaller angle between the lines from ?basepoint to ?p1 and to ?p2."
   (bind ?angle (- (get-angle ?basepoint ?p1) (get-angle ?basepoint ?p2)))
   (if (< ?angle 0) then (bind ?angle (- 0 ?angle)))
   (if (> ?angle (pi)) then (bind ?angle (- (* 2 (pi)) ?angle)))
   (if (< ?angle 0) then (return (- 0 ?angle)))
   (return ?angle))

(deffunction make-3-junction (?basepoint ?p1 ?p2 ?p3)
   "Assert the junction of three lines: the shaft is the line whose two angles sum least."
   (bind ?a12 (inscribed-angle ?basepoint ?p1 ?p2))
   (bind ?a13 (inscribed-angle ?basepoint ?p1 ?p3))
   (bind ?a23 (inscribed-angle ?basepoint ?p2 ?p3))
   (bind ?s1213 (+ ?a12 ?a13))
   (bind ?s1223 (+ ?a12 ?a23))
   (bind ?s1323 (+ ?a13 ?a23))
   (if (< ?s1213 ?s1223)
      then (if (< ?s1213 ?s1323)
              then (bind ?sum ?s1213) (bind ?shaft ?p1) (bind ?barb1 ?p2) (bind ?barb2 ?p3)
              else (bind ?sum ?s1323) (bind ?shaft ?p3) (bind ?barb1 ?p1) (bind ?barb2 ?p2))
      else (if (< ?s1223 ?s1323)
              then (bind ?sum ?s1223) (bind ?shaft ?p2) (bind ?barb1 ?p1) (bind ?barb2 ?p3)
              else (bind ?sum ?s1323) (bind ?shaft ?p3) (bind ?barb1 ?p1) (bind ?barb2 ?p2)))
   (bind ?delta (- ?sum (pi)))
   (if (< ?delta 0) then (bind ?delta (- 0 ?delta)))
   (if (< ?delta 0.001)
      then (bind ?type tee)
      else (if (> ?sum (pi)) then (bind ?type fork) else (bind ?type arrow)))
   (assert (junction (p1 (integer ?barb1)) (p2 (integer ?shaft)) (p3 (integer ?barb2))
                     (base_point (integer ?basepoint)) (type ?type))))

;;; -- duplicate: every line becomes an edge each way
(defrule reverse_edges
   (stage (value duplicate))
   ?line <- (line (p1 ?p1) (p2 ?p2))
   =>
   (assert (edge (p1 ?p1) (p2 ?p2) (joined false)))
   (assert (edge (p1 ?p2) (p2 ?p1) (joined false)))
   (retract ?line))

(defrule done_reversing
   (declare (salience -10))
   ?stage <- (stage (value duplicate))
   (not (line))
   =>
   (modify ?stage (value detect_junctions)))

;;; -- detect_junctions
(defrule make-3_junction
   (declare (salience 10))
   (stage (value detect_junctions))
   ?e1 <- (edge (p1 ?base_point) (p2 ?p1) (joined false))
   ?e2 <- (edge (p1 ?base_point) (p2 ?p2&~?p1) (joined false))
   ?e3 <- (edge (p1 ?base_point) (p2 ?p3&~?p1&~?p2) (joined false))
   =>
   (make-3-junction ?base_point ?p1 ?p2 ?p3)
   (modify ?e1 (joined true))
   (modify ?e2 (joined true))
   (modify ?e3 (joined true)))

(defrule make_L
   (stage (value detect_junctions))
   ?e1 <- (edge (p1 ?base_point) (p2 ?p2) (joined false))
   ?e2 <- (edge (p1 ?base_point) (p2 ?p3&~?p2) (joined false))
   (not (edge (p1 ?base_point) (p2 ~?p2&~?p3)))
   =>
   (assert (junction (type L) (base_point ?base_point) (p1 ?p2) (p2 ?p3)))
   (modify ?e1 (joined true))
   (modify ?e2 (joined true)))

(defrule done_detecting
   (declare (salience -10))
   ?stage <- (stage (value detect_junctions))
   (not (edge (joined false)))
   =>
   (modify ?stage (value find_initial_boundary)))

;;; -- the two boundary junctions the labelling starts from
(defrule initial_boundary_junction_L
   ?stage <- (stage (value find_initial_boundary))
   (junction (type L) (base_point ?base_point) (p1 ?p1) (p2 ?p2))
   ?e1 <- (edge (p1 ?base_point) (p2 ?p1))
   ?e2 <- (edge (p1 ?base_point) (p2 ?p2))
   (not (junction (base_point ?bp&:(> ?bp ?base_point))))
   =>
   (modify ?e1 (label B))
   (modify ?e2 (label B))
   (modify ?stage (value find_second_boundary)))

(defrule initial_boundary_junction_arrow
   ?stage <- (stage (value find_initial_boundary))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3))
   (not (junction (base_point ?base_point&:(> ?base_point ?bp))))
   =>
   (modify ?e1 (label B))
   (modify ?e2 (label +))
   (modify ?e3 (label B))
   (modify ?stage (value find_second_boundary)))

(defrule second_boundary_junction_L
   ?stage <- (stage (value find_second_boundary))
   (junction (type L) (base_point ?base_point) (p1 ?p1) (p2 ?p2))
   ?e1 <- (edge (p1 ?base_point) (p2 ?p1))
   ?e2 <- (edge (p1 ?base_point) (p2 ?p2))
   (not (junction (base_point ?bp&:(< ?bp ?base_point))))
   =>
   (modify ?e1 (label B))
   (modify ?e2 (label B))
   (modify ?stage (value labeling)))

(defrule second_boundary_junction_arrow
   ?stage <- (stage (value find_second_boundary))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3))
   (not (junction (base_point ?base_point&:(< ?base_point ?bp))))
   =>
   (modify ?e1 (label B))
   (modify ?e2 (label +))
   (modify ?e3 (label B))
   (modify ?stage (value labeling)))

;;; -- labeling: a label known at one end of a line is the label at its other end
(defrule match_edge
   (stage (value labeling))
   ?e1 <- (edge (p1 ?p1) (p2 ?p2) (label ?label& + | - | B))
   ?e2 <- (edge (p1 ?p2) (p2 ?p1) (label nil))
   =>
   (modify ?e1 (plotted t))
   (modify ?e2 (label ?label) (plotted t)))

;;; ... and the junction catalogue narrows the labels of the other lines at a junction
(defrule label_L
   (stage (value labeling))
   (junction (type L) (base_point ?p1))
   (edge (p1 ?p1) (p2 ?p2) (label + | -))
   ?e <- (edge (p1 ?p1) (p2 ~?p2) (label nil))
   =>
   (modify ?e (label B)))

(defrule label_tee_A
   (declare (salience 5))
   (stage (value labeling))
   (junction (type tee) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1) (label nil))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3))
   =>
   (modify ?e1 (label B))
   (modify ?e3 (label B)))

(defrule label_tee_B
   (stage (value labeling))
   (junction (type tee) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3) (label nil))
   =>
   (modify ?e1 (label B))
   (modify ?e3 (label B)))

(defrule label_fork-1
   (stage (value labeling))
   (junction (type fork) (base_point ?bp))
   (edge (p1 ?bp) (p2 ?p1) (label +))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2&~?p1) (label nil))
   ?e3 <- (edge (p1 ?bp) (p2 ~?p2&~?p1))
   =>
   (modify ?e2 (label +))
   (modify ?e3 (label +)))

(defrule label_fork-2
   (stage (value labeling))
   (junction (type fork) (base_point ?bp))
   (edge (p1 ?bp) (p2 ?p1) (label B))
   (edge (p1 ?bp) (p2 ?p2&~?p1) (label -))
   ?e3 <- (edge (p1 ?bp) (p2 ~?p2&~?p1) (label nil))
   =>
   (modify ?e3 (label B)))

(defrule label_fork-3
   (stage (value labeling))
   (junction (type fork) (base_point ?bp))
   (edge (p1 ?bp) (p2 ?p1) (label B))
   (edge (p1 ?bp) (p2 ?p2&~?p1) (label B))
   ?e3 <- (edge (p1 ?bp) (p2 ~?p2&~?p1) (label nil))
   =>
   (modify ?e3 (label -)))

(defrule label_fork-4
   (stage (value labeling))
   (junction (type fork) (base_point ?bp))
   (edge (p1 ?bp) (p2 ?p1) (label -))
   (edge (p1 ?bp) (p2 ?p2&~?p1) (label -))
   ?e3 <- (edge (p1 ?bp) (p2 ~?p2&~?p1) (label nil))
   =>
   (modify ?e3 (label -)))

(defrule label_arrow-1A
   (declare (salience 5))
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p1) (label ?label& B | -))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2) (label nil))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3))
   =>
   (modify ?e2 (label +))
   (modify ?e3 (label ?label)))

(defrule label_arrow-1B
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p1) (label ?label& B | -))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3) (label nil))
   =>
   (modify ?e2 (label +))
   (modify ?e3 (label ?label)))

(defrule label_arrow-2A
   (declare (salience 5))
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p3) (label ?label& B | -))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2) (label nil))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1))
   =>
   (modify ?e2 (label +))
   (modify ?e1 (label ?label)))

(defrule label_arrow-2B
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p3) (label ?label& B | -))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1) (label nil))
   =>
   (modify ?e2 (label +))
   (modify ?e1 (label ?label)))

(defrule label_arrow-3A
   (declare (salience 5))
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p1) (label +))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2) (label nil))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3))
   =>
   (modify ?e2 (label -))
   (modify ?e3 (label +)))

(defrule label_arrow-3B
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p1) (label +))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3) (label nil))
   =>
   (modify ?e2 (label -))
   (modify ?e3 (label +)))

(defrule label_arrow-4A
   (declare (salience 5))
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p3) (label +))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2) (label nil))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1))
   =>
   (modify ?e2 (label -))
   (modify ?e1 (label +)))

(defrule label_arrow-4B
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p3) (label +))
   ?e2 <- (edge (p1 ?bp) (p2 ?p2))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1) (label nil))
   =>
   (modify ?e2 (label -))
   (modify ?e1 (label +)))

(defrule label_arrow-5A
   (declare (salience 5))
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p2) (label -))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3) (label nil))
   =>
   (modify ?e1 (label +))
   (modify ?e3 (label +)))

(defrule label_arrow-5B
   (stage (value labeling))
   (junction (type arrow) (base_point ?bp) (p1 ?p1) (p2 ?p2) (p3 ?p3))
   (edge (p1 ?bp) (p2 ?p2) (label -))
   ?e1 <- (edge (p1 ?bp) (p2 ?p1) (label nil))
   ?e3 <- (edge (p1 ?bp) (p2 ?p3))
   =>
   (modify ?e1 (label +))
   (modify ?e3 (label +)))

(defrule done_labeling
   (declare (salience -10))
   ?stage <- (stage (value labeling))
   =>
   (modify ?stage (value plot_remaining_edges)))

;;; -- plot what is left; an edge nobody could label is taken for a boundary
(defrule plot_remaining
   (stage (value plot_remaining_edges))
   ?e <- (edge (plotted nil) (label ?label&~nil) (p1 ?p1) (p2 ?p2))
   =>
   (modify ?e (plotted t)))

(defrule plot_boundaries
   (stage (value plot_remaining_edges))
   ?e <- (edge (plotted nil) (label nil) (p1 ?p1) (p2 ?p2))
   =>
   (modify ?e (plotted t)))

(defrule done_plotting
   (declare (salience -10))
   ?stage <- (stage (value plot_remaining_edges))
   (not (edge (plotted nil)))
   =>
   (modify ?stage (value done)))
