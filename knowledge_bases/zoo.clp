; Zoo animal identification in 15 rules (after the classic identification task in Winston's
; "Artificial Intelligence"), written for backward chaining: ask the goal (animal ?a) and the
; prover asks only the questions the rules need. Observations are askable features.

;@askable slot=value
;@question "Does the animal have this feature: ?name?"
(deftemplate feature "an observed feature of the animal"
   (slot name (type SYMBOL))
   (slot value (allowed-symbols yes no)))

(defrule mammal-by-hair (feature (name hair) (value yes)) => (assert (class mammal)))
(defrule mammal-by-milk (feature (name gives-milk) (value yes)) => (assert (class mammal)))
(defrule bird-by-feathers (feature (name feathers) (value yes)) => (assert (class bird)))
(defrule bird-by-flight-and-eggs
   (feature (name flies) (value yes))
   (feature (name lays-eggs) (value yes))
   =>
   (assert (class bird)))
(defrule carnivore-by-meat
   (class mammal)
   (feature (name eats-meat) (value yes))
   =>
   (assert (category carnivore)))
(defrule carnivore-by-anatomy
   (class mammal)
   (feature (name pointed-teeth) (value yes))
   (feature (name claws) (value yes))
   (feature (name forward-eyes) (value yes))
   =>
   (assert (category carnivore)))
(defrule ungulate-by-hoofs (class mammal) (feature (name hoofs) (value yes)) => (assert (category ungulate)))
(defrule ungulate-by-cud (class mammal) (feature (name chews-cud) (value yes)) => (assert (category ungulate)))
(defrule cheetah
   (category carnivore)
   (feature (name tawny) (value yes))
   (feature (name dark-spots) (value yes))
   =>
   (assert (animal cheetah)))
(defrule tiger
   (category carnivore)
   (feature (name tawny) (value yes))
   (feature (name black-stripes) (value yes))
   =>
   (assert (animal tiger)))
(defrule giraffe
   (category ungulate)
   (feature (name long-neck) (value yes))
   (feature (name long-legs) (value yes))
   (feature (name dark-spots) (value yes))
   =>
   (assert (animal giraffe)))
(defrule zebra
   (category ungulate)
   (feature (name black-stripes) (value yes))
   =>
   (assert (animal zebra)))
(defrule ostrich
   (class bird)
   (feature (name flies) (value no))
   (feature (name long-neck) (value yes))
   (feature (name black-and-white) (value yes))
   =>
   (assert (animal ostrich)))
(defrule penguin
   (class bird)
   (feature (name flies) (value no))
   (feature (name swims) (value yes))
   (feature (name black-and-white) (value yes))
   =>
   (assert (animal penguin)))
(defrule albatross
   (class bird)
   (feature (name flies-well) (value yes))
   =>
   (assert (animal albatross)))
