; clips: refuses -- [PRCCODE7] duplicate deffunction parameter names (c16)
(deffunction f (?a ?a) ?a)
