; expect: 3:24 unknown slot attribute 'colour'
; clips: rejects
(deftemplate t (slot x (colour red)))
