; clips: refuses -- M1 exports u only, so t is not visible in M2
(defmodule M1 (export deftemplate u)) (deftemplate t (slot x)) (deftemplate u)
(defmodule M2 (import M1 ?ALL)) (defrule r => (assert (t (x 1))))
