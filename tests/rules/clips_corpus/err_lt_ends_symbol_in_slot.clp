; clips: refuses -- `<` ends a symbol: a<b is the two values a and <b ([TMPLTDEF2])
(deftemplate t (slot x (type SYMBOL)))
(deffacts d (t (x a<b)))
