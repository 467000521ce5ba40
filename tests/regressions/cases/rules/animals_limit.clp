;;; Animal identification: a forward-chaining classifier in the style of the classic zoo
;;; expert systems. Observations come in as facts; intermediate classes (mammal, bird,
;;; carnivore, ungulate) are derived under `logical` support, so retracting an observation
;;; withdraws what was concluded from it.
;;;
;;; Input:  (observation (attribute <a>) (value <v>))   e.g. attribute hair, value yes
;;; Output: (identified (animal <name>)) and a printed line "identified: <name>"

(deftemplate observation
  (slot attribute (type SYMBOL))
  (slot value (type SYMBOL NUMBER)))

(deftemplate class
  (slot name (type SYMBOL)))

(deftemplate identified
  (slot animal (type SYMBOL)))

;; --- broad classes -------------------------------------------------------------------

(defrule mammal-by-hair
  (logical (observation (attribute hair) (value yes)))
  =>
  (assert (class (name mammal))))

(defrule mammal-by-milk
  (logical (observation (attribute gives-milk) (value yes)))
  =>
  (assert (class (name mammal))))

(defrule bird-by-feathers
  (logical (observation (attribute feathers) (value yes)))
  =>
  (assert (class (name bird))))

(defrule bird-by-flight-and-eggs
  (logical (observation (attribute flies) (value yes))
           (observation (attribute lays-eggs) (value yes)))
  =>
  (assert (class (name bird))))

(defrule carnivore-by-diet
  (logical (class (name mammal))
           (observation (attribute eats-meat) (value yes)))
  =>
  (assert (class (name carnivore))))

(defrule carnivore-by-anatomy
  (logical (class (name mammal))
           (observation (attribute pointed-teeth) (value yes))
           (observation (attribute claws) (value yes))
           (observation (attribute forward-eyes) (value yes)))
  =>
  (assert (class (name carnivore))))

(defrule ungulate
  (logical (class (name mammal))
           (observation (attribute ?a&hoofs|chews-cud) (value yes)))
  =>
  (assert (class (name ungulate))))

;; --- species ---------------------------------------------------------------------------

(defrule cheetah
  (logical (class (name carnivore))
           (observation (attribute colour) (value tawny))
           (observation (attribute markings) (value dark-spots)))
  =>
  (assert (identified (animal cheetah))))

(defrule tiger
  (logical (class (name carnivore))
           (observation (attribute colour) (value tawny))
           (observation (attribute markings) (value black-stripes)))
  =>
  (assert (identified (animal tiger))))

(defrule giraffe
  (logical (class (name ungulate))
           (observation (attribute long-neck) (value yes))
           (observation (attribute markings) (value dark-spots)))
  =>
  (assert (identified (animal giraffe))))

(defrule zebra
  (logical (class (name ungulate))
           (observation (attribute markings) (value black-stripes)))
  =>
  (assert (identified (animal zebra))))

(defrule ostrich
  (logical (class (name bird))
           (observation (attribute flies) (value no))
           (observation (attribute long-neck) (value yes))
           (observation (attribute colour) (value black-and-white)))
  =>
  (assert (identified (animal ostrich))))

(defrule penguin
  (logical (class (name bird))
           (observation (attribute flies) (value no))
           (observation (attribute swims) (value yes))
           (observation (attribute colour) (value black-and-white)))
  =>
  (assert (identified (animal penguin))))

(defrule albatross
  (logical (class (name bird))
           (observation (attribute flies) (value yes))
           (observation (attribute wingspan-m) (value ?w&:(numberp ?w)&:(>= ?w 2.5))))
  =>
  (assert (identified (animal albatross))))

;; --- reporting -------------------------------------------------------------------------

(defrule report
  (declare (salience -10))
  (identified (animal ?a))
  =>
  (printout t "identified: " ?a crlf))

(defrule report-unknown
  (declare (salience -20))
  (exists (observation))
  (not (identified))
  =>
  (printout t "identified: nothing (no rule matched the observations)" crlf))
