; Reachability in a directed graph with cycles. The transitive rule is left-recursive, the
; case plain depth-first backward chaining never finishes; tabling makes it terminate.
(deffacts graph "a graph with the cycles a->b->c->a and d<->e"
   (edge a b) (edge b c) (edge c a) (edge c d)
   (edge d e) (edge e d) (edge f a) (edge g g))

(defrule reach-edge
   (edge ?x ?y)
   =>
   (assert (reach ?x ?y)))

(defrule reach-transitive
   (reach ?x ?y)
   (edge ?y ?z)
   =>
   (assert (reach ?x ?z)))
