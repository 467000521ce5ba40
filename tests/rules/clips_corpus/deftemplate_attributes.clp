; clips: loads -- BPG 3.1 slot attributes
(deftemplate item
   (slot id (type INTEGER) (range 0 ?VARIABLE) (default 1))
   (slot colour (type SYMBOL) (allowed-symbols red green blue) (default red))
   (slot label (type STRING SYMBOL))
   (slot price (type NUMBER) (range 0.0 1000))
   (slot made (default-dynamic (time)))
   (slot kind (allowed-values a "b" 3 4.5))
   (multislot tags (type SYMBOL) (cardinality 0 3))
   (slot req (default ?NONE))
   (slot any (type ?VARIABLE)))
(deffacts items (item (req x) (colour green) (tags t1 t2)))
