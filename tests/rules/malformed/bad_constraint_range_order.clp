; expect: 3:24 range low 10 is greater than high 1
; clips: rejects
(deftemplate t (slot x (range 10 1)))
