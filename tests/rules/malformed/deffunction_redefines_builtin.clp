; expect: 3:1 would redefine the built-in
; clips: rejects
(deffunction abs (?x) ?x)
