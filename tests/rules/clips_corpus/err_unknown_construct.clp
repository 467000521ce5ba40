; clips: refuses
(defrool r (a) => )
