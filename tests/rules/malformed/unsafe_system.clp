; expect: 3:23 unsafe function 'system'
; clips: accepts
(defrule r (a ?x) => (system "touch /tmp/pwned"))
