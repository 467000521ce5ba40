; expect: 4:14 requires a value
; clips: rejects
(deftemplate person (slot name (default ?NONE)))
(deffacts f (person))
