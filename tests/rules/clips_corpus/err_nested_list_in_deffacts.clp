; clips: refuses
(deffacts f (x ((y))))
