;;; Fault diagnosis for a car that will not start properly.
;;;
;;; Input facts are symptoms and instrument readings:
;;;   (symptom (name <symbol>))                      e.g. engine-cranks-slowly
;;;   (reading (gauge <symbol>) (value <number>))    e.g. battery-voltage 11.2
;;; Rules derive findings (intermediate conclusions, with truth maintenance through
;;; `logical`), then faults ranked by severity, then one repair recommendation per fault.
;;; Output: (fault (name ...) (severity ...)) and (repair (fault ...) (action "...")),
;;; printed as "fault: <name> (severity <n>): <action>".

(deftemplate symptom (slot name (type SYMBOL)))
(deftemplate reading (slot gauge (type SYMBOL)) (slot value (type NUMBER)))
(deftemplate finding (slot name (type SYMBOL)))
(deftemplate fault
  (slot name (type SYMBOL))
  (slot severity (type INTEGER) (range 1 5)))
(deftemplate repair (slot fault (type SYMBOL)) (slot action (type STRING)))

(defglobal ?*low-battery-volts* = 12.0
           ?*high-coolant-celsius* = 110)

(deffunction severity-label (?s)
  (switch ?s
    (case 5 then "critical")
    (case 4 then "serious")
    (case 3 then "moderate")
    (default "minor")))

;; --- findings ----------------------------------------------------------------------------

(defrule battery-weak
  (logical (reading (gauge battery-voltage) (value ?v&:(< ?v ?*low-battery-volts*))))
  =>
  (assert (finding (name battery-weak))))

(defrule no-crank
  (logical (symptom (name engine-does-not-crank)))
  =>
  (assert (finding (name starter-circuit-open))))

(defrule slow-crank
  (logical (symptom (name engine-cranks-slowly)))
  =>
  (assert (finding (name low-cranking-power))))

(defrule cranks-no-start
  (logical (symptom (name engine-cranks-normally))
           (symptom (name engine-does-not-start)))
  =>
  (assert (finding (name no-combustion))))

(defrule fuel-suspected
  (logical (finding (name no-combustion))
           (or (symptom (name fuel-gauge-empty))
               (symptom (name no-fuel-smell))))
  =>
  (assert (finding (name no-fuel-delivery))))

(defrule spark-suspected
  (logical (finding (name no-combustion))
           (not (symptom (name fuel-gauge-empty)))
           (not (symptom (name no-fuel-smell))))
  =>
  (assert (finding (name no-spark))))

(defrule overheating
  (logical (reading (gauge coolant-temperature) (value ?t&:(> ?t ?*high-coolant-celsius*))))
  =>
  (assert (finding (name overheating))))

;; --- faults --------------------------------------------------------------------------------

(defrule fault-dead-battery
  (logical (finding (name battery-weak))
           (finding (name low-cranking-power|starter-circuit-open)))
  =>
  (assert (fault (name dead-battery) (severity 3))))

(defrule fault-starter
  (logical (finding (name starter-circuit-open))
           (not (finding (name battery-weak))))
  =>
  (assert (fault (name starter-motor) (severity 4))))

(defrule fault-fuel
  (logical (finding (name no-fuel-delivery)))
  =>
  (assert (fault (name fuel-system) (severity 2))))

(defrule fault-ignition
  (logical (finding (name no-spark)))
  =>
  (assert (fault (name ignition) (severity 3))))

(defrule fault-head-gasket
  (logical (finding (name overheating))
           (symptom (name white-exhaust-smoke)))
  =>
  (assert (fault (name head-gasket) (severity 5))))

;; --- repairs (highest severity first) ------------------------------------------------------

(defrule recommend
  (declare (salience -10))
  (fault (name ?f) (severity ?s))
  (not (fault (severity ?other&:(> ?other ?s))))
  (not (repair (fault ?f)))
  =>
  (bind ?action
    (switch ?f
      (case dead-battery then "charge or replace the battery")
      (case starter-motor then "test the starter relay and motor")
      (case fuel-system then "check the fuel level and the fuel pump")
      (case ignition then "inspect the spark plugs and the ignition coil")
      (case head-gasket then "stop driving; pressure-test the cooling system")
      (default "inspect by hand")))
  (assert (repair (fault ?f) (action ?action)))
  (printout t "fault: " ?f " (" (severity-label ?s) "): " ?action crlf))

(defrule recommend-rest
  (declare (salience -20))
  (fault (name ?f) (severity ?s))
  (not (repair (fault ?f)))
  =>
  (bind ?action (str-cat "also check: " ?f))
  (assert (repair (fault ?f) (action ?action)))
  (printout t "fault: " ?f " (" (severity-label ?s) "): " ?action crlf))

(defrule healthy
  (declare (salience -30))
  (not (fault))
  =>
  (printout t "no fault found" crlf))
