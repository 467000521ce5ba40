; functions: py-score py-label
;;; Python functions registered by the caller, called from patterns and actions.
(deftemplate applicant (slot name) (slot income) (slot debt))
(deffacts people
  (applicant (name ann) (income 5000) (debt 500))
  (applicant (name bob) (income 2000) (debt 1900)))

(defrule decide
  (applicant (name ?n) (income ?i) (debt ?d))
  (test (> (py-score ?i ?d) 0.5))
  =>
  (printout t ?n " approved: " (py-label ?n (py-score ?i ?d)) crlf))

(defrule refuse
  (applicant (name ?n) (income ?i) (debt ?d&:(<= (py-score ?i ?d) 0.5)))
  =>
  (printout t ?n " refused" crlf))
