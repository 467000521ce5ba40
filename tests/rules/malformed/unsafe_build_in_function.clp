; expect: 3:20 unsafe function 'build'
; clips: accepts
(deffunction f () (build "(defrule x => )"))
