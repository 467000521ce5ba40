;;; A logic puzzle solved by generate-and-test with pattern constraints.
;;;
;;; Ann, Bob, Cat and Dan live in houses 1-4 (left to right), each keeps a different pet
;;; (dog, fish, bird, horse) and drinks something different (tea, milk, coffee, water).
;;;   1. The tea drinker lives in house 2.
;;;   2. Bob lives in the last house.
;;;   3. The bird's owner lives in house 1.
;;;   4. Dan owns the horse.
;;;   5. The milk drinker lives next to the coffee drinker.
;;;   6. Cat drinks neither coffee nor milk.
;;;   7. The dog's owner lives somewhere to the left of Dan.
;;;   8. Ann does not drink water.
;;;   9. The fish's owner drinks coffee.
;;; Who lives where, with which pet and drink? (Exactly one answer.)

(defglobal ?*solutions* = 0)

(deftemplate candidate
  (slot person) (slot house (type INTEGER)) (slot pet) (slot drink))

(deffacts puzzle
  (person ann) (person bob) (person cat) (person dan)
  (domain house 1 2 3 4)
  (domain pet dog fish bird horse)
  (domain drink tea milk coffee water))

(deffunction house-of (?value ?values ?houses)
  "The house of whoever has ?value in ?values (parallel to ?houses)."
  (nth$ (member$ ?value ?values) ?houses))

(deffunction next-to (?a ?b)
  (= (abs (- ?a ?b)) 1))

;; Generate every (person, house, pet, drink) candidate that passes the one-person clues
;; (2, 4, 6, 8); the cross-person clues are tested when four candidates are combined.
(defrule generate
  (declare (salience 10))
  (person ?p)
  (domain house $? ?h $?)
  (domain pet $? ?pet $?)
  (domain drink $? ?d $?)
  (test (or (neq ?p bob) (= ?h 4)))
  (test (or (neq ?p dan) (eq ?pet horse)))
  (test (or (neq ?p cat) (not (member$ ?d (create$ coffee milk)))))
  (test (or (neq ?p ann) (neq ?d water)))
  =>
  (assert (candidate (person ?p) (house ?h) (pet ?pet) (drink ?d))))

(defrule solve
  (candidate (person ann) (house ?h1) (pet ?p1) (drink ?d1))
  (candidate (person bob) (house ?h2&~?h1) (pet ?p2&~?p1) (drink ?d2&~?d1))
  (candidate (person cat) (house ?h3&~?h1&~?h2) (pet ?p3&~?p1&~?p2) (drink ?d3&~?d1&~?d2))
  (candidate (person dan) (house ?h4&~?h1&~?h2&~?h3) (pet ?p4&~?p1&~?p2&~?p3)
             (drink ?d4&~?d1&~?d2&~?d3))
  (test (= (house-of tea (create$ ?d1 ?d2 ?d3 ?d4) (create$ ?h1 ?h2 ?h3 ?h4)) 2))
  (test (= (house-of bird (create$ ?p1 ?p2 ?p3 ?p4) (create$ ?h1 ?h2 ?h3 ?h4)) 1))
  (test (next-to (house-of milk (create$ ?d1 ?d2 ?d3 ?d4) (create$ ?h1 ?h2 ?h3 ?h4))
                 (house-of coffee (create$ ?d1 ?d2 ?d3 ?d4) (create$ ?h1 ?h2 ?h3 ?h4))))
  (test (< (house-of dog (create$ ?p1 ?p2 ?p3 ?p4) (create$ ?h1 ?h2 ?h3 ?h4)) ?h4))
  (test (eq (nth$ (member$ fish (create$ ?p1 ?p2 ?p3 ?p4)) (create$ ?d1 ?d2 ?d3 ?d4)) coffee))
  =>
  (bind ?*solutions* (+ ?*solutions* 1))
  (assert (solution ann ?h1 ?p1 ?d1) (solution bob ?h2 ?p2 ?d2)
          (solution cat ?h3 ?p3 ?d3) (solution dan ?h4 ?p4 ?d4)))

(defrule report
  (declare (salience -10))
  (solution ?who ?house ?pet ?drink)
  =>
  (printout t "house " ?house ": " ?who " keeps the " ?pet " and drinks " ?drink crlf))

(defrule summary
  (declare (salience -20))
  =>
  (printout t ?*solutions* " solution(s)" crlf))
