; expect: 4:26 has type SYMBOL
; clips: rejects
(deftemplate person (slot age (type INTEGER)))
(deffacts f (person (age old)))
