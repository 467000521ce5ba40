; clips: refuses
(defmodule B (import A ?ALL))
