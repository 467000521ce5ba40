; every conditional element and constraint form
(deftemplate item (slot id) (slot colour) (multislot tags) (slot n (type INTEGER)))
(defglobal ?*limit* = 10)
(defrule constants-and-variables
   (declare (salience 10) (auto-focus FALSE))
   ?f <- (item (id ?id) (colour red) (tags $?before important $?after))
   (pair ?id ?other $?rest)
   (single ? $?)
   =>
   (retract ?f))
(defrule connectives
   (item (id ?id) (colour ?c&~blue&~green|red))
   (item (id ~?id) (colour ?c))
   (item (n ?n&:(> ?n 3)&:(< ?n ?*limit*)))
   (item (n =(+ 1 2)))
   (number ?x&:(integerp ?x)|foo)
   =>
   (assert (seen ?id ?c)))
(defrule conditional-elements "all the CEs"
   (declare (salience -5))
   (logical (basis ?b))
   (start)
   (test (> 2 1))
   (not (item (colour yellow)))
   (exists (item (colour red)))
   (forall (item (id ?i)) (checked ?i))
   (or (a 1) (and (b 2) (c 3)))
   (not (and (d ?b) (e ?b)))
   =>
   (assert (derived ?b)))
