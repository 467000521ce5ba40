; clips: refuses -- (f<g b) is (f <g b): f is a deftemplate, <g is not a slot ([PRNTUTIL2])
(deftemplate f (slot x))
(deffacts d (f<g b))
