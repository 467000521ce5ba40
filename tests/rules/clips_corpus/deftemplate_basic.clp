; clips: loads -- BPG 3.1 deftemplate
(deftemplate person "a person" (slot name) (slot age) (multislot friends))
(deffacts people (person (name ann) (age 31) (friends bob carl)))
