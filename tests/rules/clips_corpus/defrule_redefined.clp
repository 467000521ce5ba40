; clips: loads -- a defrule of the same name replaces the earlier one (warning)
(defrule r (a) => )
(defrule r (b) => )
