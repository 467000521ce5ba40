; expect: 3:2 unknown construct 'defrool'
; clips: rejects
(defrool r (a) => )
