; clips: loads -- a comment ends at a lone CR too: the deffacts after it is read
(deffacts d (f a)) ; comment(deffacts e (g b))
