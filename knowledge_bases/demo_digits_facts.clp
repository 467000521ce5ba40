;;; demo_digits_facts.clp -- templates shared by the digits demo's knowledge bases.
;;; An input is an ID number written as a sequence of 8x8 digit images; its last digit is a
;;; Luhn check digit. The input node asserts `sequence` and one `image` per picture; the model
;;; node asserts one `digit` per picture (the network's reading and its class probabilities).

(deftemplate sequence "the ID number to read"
  (slot id (type STRING SYMBOL) (default "anonymous"))
  (slot length (type INTEGER)))

(deftemplate image "one picture of the sequence, before the model sees it"
  (slot pos (type INTEGER))            ; 0-based, left to right
  (slot ink (type NUMBER)))            ; sum of the 64 pixel values (0..16 each)

(deftemplate route "the gate's decision: which branch of the pipeline runs"
  (slot branch (type SYMBOL) (allowed-symbols classify reject))
  (slot reason (type STRING) (default "")))

(deftemplate digit "the model's reading of one picture"
  (slot pos (type INTEGER))
  (slot label (type INTEGER) (range 0 9))
  (slot score (type FLOAT))            ; softmax probability of `label`
  (multislot probs))                   ; softmax probabilities of the digits 0..9
