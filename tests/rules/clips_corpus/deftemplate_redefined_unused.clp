; clips: loads -- an unused deftemplate may be redefined (warning)
(deftemplate t (slot a))
(deftemplate t (slot b))
(deffacts f (t (b 1)))
