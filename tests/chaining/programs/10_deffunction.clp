;;; deffunctions: recursion, wildcard parameters, conditionals.
(deffunction factorial (?n)
  (if (<= ?n 1) then 1 else (* ?n (factorial (- ?n 1)))))

(deffunction fib (?n)
  (if (< ?n 2) then ?n else (+ (fib (- ?n 1)) (fib (- ?n 2)))))

(deffunction sum-all (?first $?rest)
  (bind ?total ?first)
  (foreach ?x ?rest (bind ?total (+ ?total ?x)))
  ?total)

(deffacts n (compute 5) (compute 10))

(defrule compute
  (compute ?n)
  =>
  (printout t ?n "! = " (factorial ?n) ", fib = " (fib ?n) crlf))

(defrule sums
  (declare (salience -1))
  =>
  (printout t "sum " (sum-all 1 2 3 4.5) " " (sum-all 7) crlf))
