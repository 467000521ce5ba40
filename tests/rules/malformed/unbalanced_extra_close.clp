; expect: 3:19 unmatched ')'
; clips: rejects
(deffacts f (a 1)))
