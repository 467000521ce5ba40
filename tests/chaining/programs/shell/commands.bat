(assert (colour red))
(facts)
