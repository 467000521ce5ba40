; clips: refuses -- a construct keyword ends where a word ends: defrulex is no defrule
(defrulex =>)
