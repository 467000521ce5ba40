; expect: 3:16 unsafe function 'funcall'
; clips: accepts
(defrule r => (funcall (sym-cat sys tem) "ls"))
