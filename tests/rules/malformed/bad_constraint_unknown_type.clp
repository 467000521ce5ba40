; expect: 3:30 unknown type 'INTEGR'
; clips: rejects
(deftemplate t (slot x (type INTEGR)))
