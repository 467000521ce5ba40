; expect: 3:16 unsafe function 'open'
; clips: accepts
(defrule r => (open "/tmp/out.txt" out "w") (printout out "x") (close out))
