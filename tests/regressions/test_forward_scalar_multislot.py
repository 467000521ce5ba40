"""One value given for a multislot was refused ("wrong number of values for the slot"), though
CLIPS reads `(t (m x))` as a multifield of one value; it is now asserted the same way."""

from __future__ import annotations

import clips
import pytest

from chaining.forward import EngineConfig, FactAssertError, ForwardEngine

KB = '(deftemplate t (multislot m) (slot s)) (defrule r (t (m $?v)) => (printout t (length$ $?v) " " $?v crlf))'


def test_one_value_for_a_multislot_is_a_multifield_of_one_like_clips():
    env = clips.Environment()  # raw CLIPS reading the same fact as text
    env.build("(deftemplate t (multislot m) (slot s))")
    env.assert_string("(t (m x) (s 1))")
    raw = next(iter(env.facts()))
    assert tuple(raw["m"]) == ("x",)

    engine = ForwardEngine.from_sources([("m.clp", KB)], config=EngineConfig(workers=1))
    result = engine.evaluate([{"template": "t", "slots": {"m": "x", "s": 1}}])
    assert result.output == "1 (x)\n"
    assert result.facts[0].slots["m"] == ("x",)
    with pytest.raises(
        FactAssertError,
        match=r"facts\[0\]\.slots\.s: a multifield of 2 value\(s\) is not allowed: slot s of t is a single-field slot",
    ):
        engine.evaluate([{"template": "t", "slots": {"s": [1, 2]}}])  # a list for a single slot is still an error
