; clips: loads -- strings holding delimiters, comments anywhere
; leading comment
(deffacts s ; after the name
   (text "semi ; inside" "paren ( inside" "escaped \\ backslash" "tab\there" "unicode äöü ✓"))
