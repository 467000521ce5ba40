; clips: refuses -- a BEL character ends a symbol and is <<<unprintable character>>>
(deftemplate t (slot x (type SYMBOL)))
(deffacts d (t (x ab)))
