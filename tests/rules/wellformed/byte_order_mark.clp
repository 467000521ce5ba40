; A rule file saved with a UTF-8 byte-order mark (Windows editors): CLIPS's load skips it.
(deftemplate reading (slot v))
(defrule high (reading (v ?v&:(> ?v 5))) => (assert (alarm)))
