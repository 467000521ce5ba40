; expect: 3:17 unsafe function 'dribble-on'
; clips: accepts
(deffacts f (a (dribble-on "/tmp/log")))
