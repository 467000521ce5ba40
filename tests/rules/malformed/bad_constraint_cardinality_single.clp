; expect: 3:24 cardinality applies only to multislots
; clips: rejects
(deftemplate t (slot x (cardinality 1 2)))
