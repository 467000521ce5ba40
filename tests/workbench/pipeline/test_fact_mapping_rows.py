"""Fact mappings (`map_facts`) over `foreach` rows: each expression compiled once per call, a pure
vector built-in (`softmax`, `sigmoid`) computed once per row for the same argument, the facts and
errors the same as evaluating every slot on its own."""

from __future__ import annotations

import numpy as np
import pytest

from rules.facts import Fact, fact_key
from workbench.pipeline.errors import NodeExecutionError
from workbench.pipeline.expressions import CALL_MEMO, FUNCTIONS, compile_expression
from workbench.pipeline.nodes.mapping import map_facts

DIGIT = {
    "template": "digit",
    "foreach": "logits",
    "slots": {"pos": "index", "label": "argmax(value)", "score": "max(softmax(value))", "probs": "softmax(value)"},
}


class Counted:
    """A vector that counts how often numpy converts it (each built-in call converts its argument once)."""

    def __init__(self, values: list[float]) -> None:
        self.values = values
        self.conversions = 0

    def __array__(self, dtype=None, copy=None):
        self.conversions += 1
        return np.asarray(self.values, dtype=dtype)

    def __len__(self) -> int:
        return len(self.values)


def test_digit_facts_are_those_of_each_slot_evaluated_on_its_own():
    rng = np.random.default_rng(7)
    logits = rng.normal(size=(8, 10)).astype(np.float32)
    got = map_facts("read", "model", [DIGIT], {"logits": logits})
    assert len(got) == 8
    for j, f in enumerate(got):
        row = {"index": j, "value": logits[j]}  # no memo in this scope: every call computed
        want = Fact(
            "digit",
            {k: compile_expression(e).evaluate(row) for k, e in DIGIT["slots"].items()}
            | {"probs": tuple(FUNCTIONS["softmax"](logits[j]))},
        )
        assert fact_key(f) == fact_key(want) and str(f) == str(want)
        assert [type(v) for v in f.slots.values()] == [int, int, float, tuple]
        assert f.slots["score"] == max(f.slots["probs"])


def test_softmax_of_the_same_value_is_computed_once_per_row():
    rows = [Counted([0.5, 1.5, -2.0]), Counted([3.0, 0.0, 1.0])]
    map_facts("read", "model", [DIGIT], {"logits": rows})
    # argmax converts once, the two softmax calls once together
    assert [r.conversions for r in rows] == [2, 2]


def test_without_a_memo_in_the_scope_every_call_is_computed():
    v = Counted([0.5, 1.5, -2.0])
    e1, e2 = compile_expression("max(softmax(value))"), compile_expression("softmax(value)")
    e1.evaluate({"value": v})
    e2.evaluate({"value": v})
    assert v.conversions == 2
    scope = {"value": v, CALL_MEMO: {}}
    assert e2.evaluate(scope) == e2.evaluate(scope) == FUNCTIONS["softmax"]([0.5, 1.5, -2.0])
    assert v.conversions == 3


def test_a_callers_own_function_of_that_name_is_never_memoised():
    calls = []

    def softmax(x):
        calls.append(x)
        return [1.0]

    got = map_facts("read", "model", [DIGIT], {"logits": [[1.0, 2.0]]}, {"softmax": softmax})
    assert len(calls) == 2 and got[0].slots["probs"] == (1.0,) and got[0].slots["score"] == 1.0


def test_an_error_names_the_field_as_before():
    with pytest.raises(
        NodeExecutionError,
        match=r"field facts\[0\]: TypeError: value is missing \(None\) in expression .argmax\(value\).",
    ):
        map_facts("read", "model", [DIGIT], {"logits": [None]})
    bad = {"template": "t", "foreach": "xs", "slots": {"a": "value", "b": "nope("}}
    assert map_facts("m", "model", [bad], {"xs": []}) == []  # no row: the bad slot is never compiled
    with pytest.raises(NodeExecutionError, match=r"field facts\[0\]"):
        map_facts("m", "model", [bad], {"xs": [1.0]})
