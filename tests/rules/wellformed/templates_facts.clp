; deftemplate with every slot attribute, deffacts with template and ordered facts
(deftemplate person "a person"
   (slot name (type SYMBOL) (default ?NONE))
   (slot age (type INTEGER) (range 0 150) (default 0))
   (slot height (type FLOAT) (default-dynamic (+ 1.5 0.25)))
   (slot mood (allowed-symbols happy sad) (default happy))
   (slot nickname (type STRING) (allowed-strings "bob" "al") (default "bob"))
   (multislot kids (type SYMBOL) (cardinality 0 ?VARIABLE))
   (multislot scores (allowed-numbers 1 2 3.5) (default 1 2))
   (slot kind (allowed-values a 1 "x") (default a))
   (slot anything))
(deftemplate empty)
(deffacts people "initial people"
   (person (name ann) (age 31) (kids tom sue))
   (person (name bob) (mood sad) (scores))
   (parent ann tom)
   (empty)
   (number 1 2.5 -3 "str" sym))
