; clips: refuses -- as err_template_not_imported, with a call as the value
(defmodule M1) (deftemplate t (slot x))
(defmodule M2) (deffacts d (t (x (+ 1 2))))
