;;; Waltz line labelling: label every line of a line drawing of polyhedra as convex (+),
;;; concave (-) or occluding boundary (in/out: the arrow along the line, with the object on
;;; its right, points into or out of the junction) by constraint propagation over the
;;; catalogue of physically possible junction labellings (Huffman-Clowes trihedral
;;; junctions: L, fork, arrow, T). Written for Workbench from D. Waltz, "Understanding line
;;; drawings of scenes with shadows" (1975) and the OPS5 benchmark's description (Brant et
;;; al. 1991), which replicates a scene many times.
;;;
;;; Input: (junction (id J) (type L|fork|arrow|T) (edges K1 K2 ...)) with the neighbours
;;; in clockwise order, and (border (from J) (to K)) for lines on the scene's outline
;;; (their arrow runs clockwise around the outline). Each junction starts with every
;;; catalogue labelling; a labelling is dropped when some neighbour has no labelling that
;;; agrees on their shared line. Output: the surviving labelling(s) of each junction.

(deftemplate junction (slot id) (slot type) (multislot edges))
(deftemplate border (slot from) (slot to))
(deftemplate catalog (slot type) (multislot labels))
(deftemplate candidate (slot junction) (multislot labels))
(deftemplate line (slot from) (slot to))

(deffacts catalogue
  ;; L: the two lines in clockwise order, the angle between them below 180 degrees.
  (catalog (type L) (labels out in)) (catalog (type L) (labels in out))
  (catalog (type L) (labels + out)) (catalog (type L) (labels in +))
  (catalog (type L) (labels - in)) (catalog (type L) (labels out -))
  ;; fork: three lines, every angle below 180 degrees; all rotations listed.
  (catalog (type fork) (labels + + +)) (catalog (type fork) (labels - - -))
  (catalog (type fork) (labels out - in)) (catalog (type fork) (labels in out -))
  (catalog (type fork) (labels - in out))
  ;; arrow: barb, shaft, barb in clockwise order (the angle between the barbs above 180).
  (catalog (type arrow) (labels out + in)) (catalog (type arrow) (labels + - +))
  (catalog (type arrow) (labels - + -))
  ;; T: bar, stem, bar; the bar occludes whatever the stem is.
  (catalog (type T) (labels in + out)) (catalog (type T) (labels in - out))
  (catalog (type T) (labels in in out)) (catalog (type T) (labels in out out)))

(deffunction agree (?mine ?theirs)
  "Labels of one line seen from its two ends agree."
  (or (and (eq ?mine +) (eq ?theirs +))
      (and (eq ?mine -) (eq ?theirs -))
      (and (eq ?mine out) (eq ?theirs in))
      (and (eq ?mine in) (eq ?theirs out))))

(deffunction label-towards (?to ?edges ?labels)
  (nth$ (member$ ?to ?edges) ?labels))

(defrule lines
  (declare (salience 30))
  (junction (id ?j) (edges $? ?k $?))
  =>
  (assert (line (from ?j) (to ?k))))

(defrule initial-labellings
  (declare (salience 20))
  (junction (id ?j) (type ?t))
  (catalog (type ?t) (labels $?l))
  =>
  (assert (candidate (junction ?j) (labels ?l))))

(defrule outline-leaving
  (declare (salience 10))
  (border (from ?j) (to ?k))
  (junction (id ?j) (edges $?e))
  ?c <- (candidate (junction ?j) (labels $?l&:(neq (label-towards ?k ?e ?l) out)))
  =>
  (retract ?c))

(defrule outline-arriving
  (declare (salience 10))
  (border (from ?k) (to ?j))
  (junction (id ?j) (edges $?e))
  ?c <- (candidate (junction ?j) (labels $?l&:(neq (label-towards ?k ?e ?l) in)))
  =>
  (retract ?c))

(defrule waltz-filter
  ?c <- (candidate (junction ?j) (labels $?l))
  (junction (id ?j) (edges $?e))
  (line (from ?j) (to ?k))
  (junction (id ?k) (edges $?ke))
  (not (candidate (junction ?k)
                  (labels $?kl&:(agree (label-towards ?k ?e ?l) (label-towards ?j ?ke ?kl)))))
  =>
  (retract ?c))

(defrule report
  (declare (salience -10))
  (junction (id ?j) (type ?t))
  (candidate (junction ?j) (labels $?l))
  =>
  (assert (labelled ?j))
  (printout t ?j " " ?t " " (implode$ ?l) crlf))

(defrule impossible
  (declare (salience -20))
  (junction (id ?j))
  (not (candidate (junction ?j)))
  =>
  (printout t ?j " has no consistent labelling" crlf))
