; clips: refuses -- [PRCCODE3] a loop-for-count variable used after its loop, in a deffunction
(deffunction g (?a) (loop-for-count (?i 1 2) do (printout t ?i)) ?i)
