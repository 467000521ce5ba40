; clips: refuses -- [PRCCODE7] a wildcard parameter named like a single-field one
(deffunction f "a (comment)" (?a ?b
   $?a) ?a)
