; clips: loads -- CLIPS loads it; (reset) fails (warning)
(deffacts f (male ?*g* gus))
