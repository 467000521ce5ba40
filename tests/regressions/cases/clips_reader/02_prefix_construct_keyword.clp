(defrulex =>)
(deftemplatex)
