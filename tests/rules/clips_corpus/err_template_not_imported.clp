; clips: refuses -- M2 imports nothing: t of M1 is not visible, (x 1) reads as a call ([EXPRNPSR3])
(defmodule M1) (deftemplate t (slot x))
(defmodule M2) (deffacts d (t (x 1)))
