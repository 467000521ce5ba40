; expect: 4:13 unexpected end of file
; clips: rejects
(deftemplate person
  (slot name