; expect: 3:1 unknown annotation ';@askabel'
; clips: accepts
;@askabel
(deftemplate t (slot x))
