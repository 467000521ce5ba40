; Family relations, written to be used backwards (goals) and forwards (CLIPS) alike.
; Base facts are ordered (parent PARENT CHILD) and (male X) / (female X) facts.
; Goals: (grandparent ?g otto), (ancestor ?a otto), (sibling ?x ?y), (only-child ?c).

(deffacts family "three generations"
   (parent adam bert) (parent adam clara)
   (parent eva bert) (parent eva clara)
   (parent bert dora) (parent bert emil)
   (parent clara frank)
   (parent dora otto) (parent gus otto)
   (parent frank hanna)
   (male adam) (male bert) (male emil) (male frank) (male otto) (male gus)
   (female eva) (female clara) (female dora) (female hanna))

(defrule grandparent
   (parent ?g ?p)
   (parent ?p ?c)
   =>
   (assert (grandparent ?g ?c)))

(defrule ancestor-parent "a parent is an ancestor"
   (parent ?a ?c)
   =>
   (assert (ancestor ?a ?c)))

(defrule ancestor-recursive "an ancestor of a parent is an ancestor"
   (parent ?p ?c)
   (ancestor ?a ?p)
   =>
   (assert (ancestor ?a ?c)))

(defrule sibling "children of a common parent, not the same person"
   (parent ?p ?x)
   (parent ?p ?y)
   (test (neq ?x ?y))
   =>
   (assert (sibling ?x ?y)))

(defrule brother
   (sibling ?x ?y)
   (male ?x)
   =>
   (assert (brother ?x ?y)))

; Salience -10 lets every sibling fact be derived before this rule fires forwards, so CLIPS
; reaches the same facts as the backward prover's negation as failure (stratified negation).
(defrule only-child "a child with no sibling"
   (declare (salience -10))
   (parent ?p ?c)
   (not (sibling ?c ?))
   =>
   (assert (only-child ?c)))
