; clips: refuses -- as err_lt_ends_symbol_in_slot, in a deffacts that is not plain data
(deftemplate t (slot x))
(deffacts d (t (x a<b)) (u (+ 1 2)))
