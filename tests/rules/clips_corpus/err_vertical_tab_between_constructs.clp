; clips: refuses -- a vertical tab is not whitespace to CLIPS ([CSTRCPSR1])
(deffacts d (f a))

(deffacts e (g b))
