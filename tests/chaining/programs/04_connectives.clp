;;; Connective constraints: & | ~ and combinations.
(deftemplate light (slot id) (slot colour) (slot state))
(deffacts lights
  (light (id 1) (colour red) (state on))
  (light (id 2) (colour green) (state off))
  (light (id 3) (colour amber) (state on))
  (light (id 4) (colour blue) (state broken)))

(defrule warm-colour
  (light (id ?i) (colour ?c&red|amber))
  =>
  (printout t ?i " is warm (" ?c ")" crlf))

(defrule not-green-not-blue
  (light (id ?i) (colour ~green&~blue))
  =>
  (printout t ?i " neither green nor blue" crlf))

(defrule working
  (light (id ?i) (state ?s&~broken&on|off))
  =>
  (printout t ?i " works, state " ?s crlf))

(defrule pair-different
  (light (id ?a) (state on))
  (light (id ?b&~?a) (state on))
  (test (< ?a ?b))
  =>
  (printout t "both on: " ?a " " ?b crlf))
