; expect: 3:36 overlaps another type
; clips: rejects
(deftemplate t (slot x (type FLOAT NUMBER)))
