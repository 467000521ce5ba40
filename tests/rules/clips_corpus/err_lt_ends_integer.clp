; clips: refuses -- 1<2 is the integer 1 and the symbol <2 ([TMPLTDEF2])
(deftemplate t (slot x (type INTEGER)))
(deffacts d (t (x 1<2)))
