"""A fact slot value CLIPS refuses was reported as "value of a type the slot does not allow (value 'lots')":
neither what the slot allows nor the value's CLIPS type (JSON true showed as 'TRUE', "z z" looked like a
symbol). The message now says what the value becomes in CLIPS and what the deftemplate allows, read from
CLIPS (`kb run --facts`, `POST /v1/kb/{name}/run`, pipeline rules nodes share it)."""

from __future__ import annotations

import pytest

from chaining.forward import FactAssertError, ForwardEngine

KB = """
(deftemplate item (slot name (type SYMBOL)) (slot qty (type INTEGER)) (slot size (range 1 5))
  (slot kind (allowed-symbols box crate)) (slot note (type STRING)))
(defrule r (item) =>)
"""

CASES = [
    ({"qty": "lots"}, "facts[0].slots.qty: the symbol lots is not allowed: slot qty of item takes INTEGER"),
    ({"qty": True}, "facts[0].slots.qty: the symbol TRUE is not allowed: slot qty of item takes INTEGER"),
    ({"name": "z z"}, 'facts[0].slots.name: the string "z z" is not allowed: slot name of item takes SYMBOL'),
    (
        {"size": 9},
        "facts[0].slots.size: the integer 9 is not allowed: slot size of item takes numbers in the range 1 to 5",
    ),
    ({"kind": "bag"}, "facts[0].slots.kind: the symbol bag is not allowed: slot kind of item allows only box crate"),
    ({"note": 2.5}, "facts[0].slots.note: the float 2.5 is not allowed: slot note of item takes STRING"),
]


@pytest.mark.parametrize(("slots", "message"), CASES)
def test_a_refused_slot_value_names_its_type_and_what_the_slot_allows(slots, message) -> None:
    with ForwardEngine.from_sources([("k.clp", KB)]) as engine:
        with pytest.raises(FactAssertError) as info:
            engine.evaluate([{"template": "item", "slots": slots}])
        assert str(info.value) == message
        assert len(engine.evaluate([{"template": "item", "slots": {"qty": 3}}]).firings) == 1  # still usable
