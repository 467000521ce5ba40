; expect: 3:1 outside any construct
; clips: rejects
hello
(deffacts f (a))
