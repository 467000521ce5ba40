;;; Ordered facts, shared variables, test with neq, not.
(deffacts family
  (parent tom bob) (parent tom liz) (parent bob ann) (parent bob pat) (parent pat jim)
  (male tom) (male bob) (male jim) (female liz) (female ann) (female pat))

(defrule grandparent
  (parent ?g ?p)
  (parent ?p ?c)
  =>
  (assert (grandparent ?g ?c))
  (printout t ?g " is a grandparent of " ?c crlf))

(defrule sibling
  (parent ?p ?a)
  (parent ?p ?b)
  (test (neq ?a ?b))
  =>
  (assert (sibling ?a ?b)))

(defrule brother
  (sibling ?a ?b)
  (male ?a)
  =>
  (printout t ?a " is a brother of " ?b crlf))

(defrule childless
  (declare (salience -5))
  (or (male ?x) (female ?x))
  (not (parent ?x ?))
  =>
  (printout t ?x " has no children" crlf))
