; expect: 3:16 unsafe function 'eval'
; clips: accepts
(defrule r => (eval "(system \"ls\")"))
