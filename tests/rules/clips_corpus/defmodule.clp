; clips: loads -- BPG 10 defmodule
(defmodule A (export deftemplate a-fact))
(deftemplate A::a-fact (slot v))
(defmodule B (import A deftemplate a-fact) (export ?ALL))
(defrule B::r (a-fact (v ?v)) => (printout t ?v crlf))
(defmodule MAIN2 (import B ?ALL))
