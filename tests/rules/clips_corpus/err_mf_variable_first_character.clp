; clips: refuses -- $?_x: [SCANNER2]
(defrule r (f $?_x) =>)
