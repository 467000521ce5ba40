; expect: 3:14 unknown template 'persn'
; clips: rejects
(deffacts f (persn (name bob)))
