; expect: 4:30 unsafe function 'remove'
; clips: accepts
(defgeneric g)
(defmethod g ((?x INTEGER)) (remove "/tmp/f"))
