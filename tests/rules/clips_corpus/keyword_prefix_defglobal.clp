; clips: refuses -- a construct keyword ends where a word ends: defglobalx is no defglobal
(defglobalx ?*a* = 1)
