; expect: 3:17 cannot be bound inside not
; clips: rejects
(defrule r (not ?f <- (a)) => )
