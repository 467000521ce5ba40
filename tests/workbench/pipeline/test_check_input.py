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
    assert exc.value.field == "$.xs[1]" and str(exc.value).startswith("input.xs[1]: NaN: not a finite JSON number")
    with pytest.raises(InputValidationError) as exc:
        check_input(p, {"xs": ["not a number"]})  # the schema still runs
    assert str(exc.value) == 'input.xs[0]: "not a number" is not of type "number" (input node \'in\')'
    with pytest.raises(InputValidationError) as exc:  # a key that is not a name is quoted in the path
        check_input(p, {"xs": [1.0], "a b": {"c-d": [math.inf]}})
    assert exc.value.field == '$["a b"]["c-d"][0]' and str(exc.value).startswith(
        'input["a b"]["c-d"][0]: a number too large for a float'
    )


def test_arrays_of_bounded_numbers_agree_with_jsonschema():
    """The fused loop for `items: {type: number, minimum, maximum}` accepts exactly what jsonschema
    accepts (a refusal names the item, from jsonschema)."""
    import jsonschema

    from workbench.pipeline.schema import _compiled, check_schema

    schema = {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 16}}
    fast, _ = _compiled(__import__("json").dumps(schema, sort_keys=True))
    values = [[], [0, 16, 3.5], [0, 17], [-0.1], [True], [1, "2"], [None], [[1]], [1e308], "not a list"]
    for v in values:
        ok = jsonschema.Draft202012Validator(schema).is_valid(v)
        assert fast(v) == ok, v
        if ok:
            check_schema("n", schema, v)
        else:
            with pytest.raises(InputValidationError):
                check_schema("n", schema, v)
    with pytest.raises(InputValidationError) as exc:
        check_schema("n", schema, [1, 17])
    assert exc.value.field == "$[1]"


ECHO = """
name: echo_schema
nodes:
  - id: in
    type: input
    schema: {type: object, properties: {n: {type: number, maximum: 10}}}
  - id: out
    type: output
    fields: {n: "input.n"}
    schema: {type: object, properties: {n: {type: number, maximum: 10}}}
edges:
  - {from: in, to: out}
"""


async def test_a_schema_changed_in_place_is_checked_as_it_is_now(wb):
    """The compiled checks are kept per pipeline content (`Plan.schema_check`): editing a schema in
    place (a pipeline that is not shared) gives the run its new checks, not the old ones."""
    p = Pipeline.from_yaml(ECHO)
    assert (await wb.run(p, {"n": 5})).outputs == {"n": 5}
    p.nodes["in"].config["schema"]["properties"]["n"]["maximum"] = 3
    with pytest.raises(InputValidationError):
        await wb.run(p, {"n": 5})
    p.nodes["in"].config["schema"]["properties"]["n"]["maximum"] = 10
    p.nodes["out"].config["schema"]["properties"]["n"]["maximum"] = 3
    r = await wb.run(p, {"n": 5})
    assert r.status == "failed" and "output does not match its schema" in r.error
    p.nodes["out"].config["schema"]["properties"]["n"]["maximum"] = 10
    assert (await wb.run(p, {"n": 5})).outputs == {"n": 5}
