; clips: loads -- variables, multifield calls and $? leave the count unknown; a missing slot gets a derived default
(deftemplate t (multislot m (cardinality 2 3)))
(deffacts d (t) (t (m a b)))
(defrule r (f ?x) (t (m a b c d $?)) => (assert (t (m ?x))) (assert (t (m a (create$ 1 2) b c))))
