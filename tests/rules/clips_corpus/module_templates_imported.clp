; clips: loads -- imported templates are visible; M1::t makes M1 current again
(defmodule M1 (export ?ALL)) (deftemplate t (slot x))
(defmodule M2 (import M1 deftemplate t)) (deffacts d (t (x 1)))
(defmodule M3) (deftemplate M1::u (slot y)) (deffacts e (u (y 2)))
(defmodule M4) (deffacts f (t 1 2))
