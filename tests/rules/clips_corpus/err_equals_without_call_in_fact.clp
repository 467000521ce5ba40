; clips: refuses
(deffacts f (edge = c))
