; clips: loads -- field / multifield are synonyms of slot / multislot
(deftemplate item (field foo) (multifield bar))
(deffacts start (item (foo x) (bar 1 2 3)))
(defrule show (item (bar $?b)) => (printout t "bar = " ?b crlf))
