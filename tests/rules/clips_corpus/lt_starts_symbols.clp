; clips: loads -- `<` starts a symbol and ends the one before it; <- and => are symbols only alone
(deffacts d (f a<b c<<d <e <-x =>x é<a 1.5<))
(defrule r (f ?x<y $?) (g ?z) => (printout t ?z crlf))
(defrule s (f [a]b ?) => (bind ?v (<= 1 2)))
