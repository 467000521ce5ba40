; clips: refuses -- ?1 is not a variable: [SCANNER2] a variable name starts with a letter
(defrule r (f ?1) =>)
