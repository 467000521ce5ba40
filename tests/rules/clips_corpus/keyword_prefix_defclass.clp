; clips: refuses -- a construct keyword ends where a word ends: defclassX is no defclass
(defclassX a)
