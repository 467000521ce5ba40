; clips: refuses -- a construct keyword ends where a word ends: deftemplatex is no deftemplate
(deftemplatex)
