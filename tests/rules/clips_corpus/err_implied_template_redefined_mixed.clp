; clips: refuses -- as err_implied_template_redefined, deffacts not plain data
(deffacts d (f a (+ 1 2)))
(deftemplate f (slot x))
