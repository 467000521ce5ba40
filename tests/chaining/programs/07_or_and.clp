;;; or / and conditional elements.
(deffacts f (weather rain) (temperature 4) (day saturday))

(defrule take-umbrella
  (or (weather rain) (weather snow))
  =>
  (printout t "take an umbrella" crlf))

(defrule stay-in
  (or (and (weather rain) (temperature ?t&:(< ?t 10)))
      (and (weather snow) (day ?)))
  =>
  (printout t "stay in" crlf))

(defrule weekend
  (day ?d&saturday|sunday)
  (and (weather ?w) (temperature ?t))
  =>
  (printout t "weekend " ?d " " ?w " " ?t crlf))
