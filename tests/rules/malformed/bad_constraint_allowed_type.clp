; expect: 3:45 is not allowed in (allowed-symbols
; clips: rejects
(deftemplate t (slot x (allowed-symbols red "blue")))
