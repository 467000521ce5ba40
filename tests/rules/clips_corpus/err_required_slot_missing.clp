; clips: refuses
(deftemplate p (slot a (default ?NONE)) (slot b))
(deffacts f (p (b 1)))
