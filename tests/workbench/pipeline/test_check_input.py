"""`check_input` serialises a run input once: the canonical JSON it hashes is also the NaN check.
The hash must stay the result-cache key that earlier versions stored (`input_hash`), and a
non-finite number is still refused naming its JSON path."""

from __future__ import annotations

import math

import pytest

from workbench.pipeline.errors import InputValidationError
from workbench.pipeline.spec import Pipeline
from workbench.pipeline.steps import check_input, input_hash

DOC = """
name: echo
nodes:
  - id: in
    type: input
    schema: {type: object, properties: {xs: {type: array, items: {type: number}}, name: {type: string}}}
  - id: out
    type: output
    fields: {n: "len(input.xs)"}
edges:
  - {from: in, to: out}
"""


def test_hash_is_the_stored_cache_key_and_nan_is_refused_with_its_path():
    p = Pipeline.from_yaml(DOC)
    x = {"name": "zé", "xs": [1, 2.5, -3e-9], "extra": {"b": [True, None], "a": "ü"}}
    assert check_input(p, x) == input_hash(x)
    assert check_input(p, {"xs": [1], "name": "a"}) == check_input(p, {"name": "a", "xs": [1]})  # key order
    with pytest.raises(InputValidationError) as exc:
        check_input(p, {"xs": [1.0, math.nan]})
    assert exc.value.field == "$.xs[1]" and str(exc.value).startswith("input.xs[1]: nan is not a JSON number")
    with pytest.raises(InputValidationError) as exc:
        check_input(p, {"xs": ["not a number"]})  # the schema still runs
    assert str(exc.value) == 'input.xs[0]: "not a number" is not of type "number" (input node \'in\')'
    with pytest.raises(InputValidationError) as exc:  # a key that is not a name is quoted in the path
        check_input(p, {"xs": [1.0], "a b": {"c-d": [math.inf]}})
    assert exc.value.field == '$["a b"]["c-d"][0]' and str(exc.value).startswith('input["a b"]["c-d"][0]: inf')
