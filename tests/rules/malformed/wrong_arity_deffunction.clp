; expect: 4:35 function 'twice' expects exactly 1 argument, got 2
; clips: rejects
(deffunction twice (?x) (* 2 ?x))
(defrule r (a ?x) => (printout t (twice ?x 3) crlf))
