; clips: refuses -- DEL (0x7f) in a symbol of an ordered fact
(deffacts d (f ab) (g été))
