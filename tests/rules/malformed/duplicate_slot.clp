; expect: 3:31 duplicate slot 'x'
; clips: rejects
(deftemplate t (slot x) (slot x))
