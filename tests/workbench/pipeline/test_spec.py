"""The pipeline document: byte-for-byte round trip, canonical form, content hash, located structural errors."""

from __future__ import annotations

import hashlib

import pytest

from workbench.pipeline import Pipeline, PipelineValidationError
from workbench.pipeline.expressions import ExpressionError, compile_expression

from .conftest import EXAMPLE

ODD = """# a hand-written pipeline with comments, flow style and odd spacing
name:   odd-one
nodes:
  - {id: req, type: input, schema: {type: object}}   # inline
  - id: out
    type: output
    fields:
      echo:   "input.x"     # keep me
edges: [{from: req, to: out}]
"""


@pytest.mark.parametrize("text", [(EXAMPLE / "digits_review.yaml").read_text(), ODD])
def test_load_then_save_is_byte_for_byte(text, tmp_path):
    p = Pipeline.from_yaml(text)
    assert p.to_yaml() == text
    out = p.save(tmp_path / "copy.yaml")
    assert out.read_bytes() == text.encode()
    assert Pipeline.from_file(out).to_yaml() == text
    assert p.version == hashlib.sha256(text.encode()).hexdigest()


def test_edited_pipeline_is_written_in_canonical_form_which_round_trips():
    p = Pipeline.from_yaml(ODD)
    v0 = p.version
    p.nodes["out"].config["fields"]["twice"] = "input.x * 2"
    text = p.to_yaml()
    assert text != ODD and p.version != v0
    again = Pipeline.from_yaml(text)
    assert again.to_yaml() == text and again.version == p.version
    assert again.nodes["out"].get("fields") == {"echo": "input.x", "twice": "input.x * 2"}


def test_built_in_code_equals_loaded():
    p = Pipeline("tiny")
    p.add_node("req", "input", schema={"type": "object"})
    p.add_node("out", "output", fields={"echo": "input.x"})
    p.chain("req", "out")
    q = Pipeline.from_yaml(p.to_yaml())
    assert q.to_data() == p.to_data() and q.version == p.version
    assert list(p.graph.edges) == [("req", "out")]


def test_structural_errors_name_node_field_and_location():
    text = """name: broken
nodes:
  - id: req
    type: input
  - id: m
    type: model
    inputs: {pixels: "softmax(input.pixels"}
    colour: blue
  - id: r
    type: rules
  - id: r
    type: output
  - id: x
    type: teleport
edges:
  - {from: req, to: nowhere}
  - {from: req, to: m, when: yes}
"""
    with pytest.raises(PipelineValidationError) as ei:
        Pipeline.from_yaml(text, filename="broken.yaml")
    got = {(i.node, i.field): (i.line, i.column) for i in ei.value.issues}
    assert got[("m", "colour")] == (8, 5)
    assert got[("m", "model")][0] == 5  # required: located at the node
    assert got[("m", "inputs.pixels")] == (7, 14)
    assert ("r", "knowledge_base") in got
    assert got[("r", "id")] == (11, 5)  # duplicate id
    assert ("x", "type") in got
    assert got[(None, "edges[0].to")] == (16, 17)
    assert got[("req", "edges[1].when")][0] == 17
    msg = str(ei.value)
    assert "broken.yaml:8:5: node 'm', field 'colour': unknown field" in msg


def test_yaml_syntax_error_is_located():
    with pytest.raises(PipelineValidationError) as ei:
        Pipeline.from_yaml("name: x\nnodes: [\n", filename="bad.yaml")
    i = ei.value.issues[0]
    assert i.file == "bad.yaml" and i.line >= 2 and "not valid YAML" in i.message


@pytest.mark.parametrize(
    "bad", ["__import__('os')", "x.__class__", "(lambda: 1)()", "[a for a in b]", "open('f')", "x.y()"]
)
def test_expressions_refuse_anything_outside_the_language(bad):
    with pytest.raises(ExpressionError):
        compile_expression(bad)


def test_shared_pipeline_keeps_its_fingerprint_until_edited_by_its_methods():
    p = Pipeline.from_yaml(ODD)
    v0, fp0 = p.version, p.fingerprint()
    p.share()
    assert p.fingerprint() == fp0 and p.version == v0
    p.add_node("extra", "output", fields={"y": "input.x"})  # a building method un-shares it
    assert p.fingerprint() != fp0 and p.version != v0
    assert p.fingerprint() == Pipeline.from_yaml(p.to_yaml()).fingerprint()


def test_compiled_expressions_keep_the_language_semantics():
    ev = lambda text, **scope: compile_expression(text).evaluate(scope)  # noqa: E731
    assert ev("a < b < c", a=1, b=2, c=3) is True and ev("a < b < c", a=1, b=3, c=2) is False
    assert ev("a < b", a=None, b=1) is False and ev("a == b", a=None, b=None) is True
    assert ev("a != b", a=None, b=1) is True
    assert ev("a and b", a=0, b=1) == 0 and ev("a or b", a=0, b=5) == 5
    assert ev("xs[1:3]", xs=[1, 2, 3, 4]) == [2, 3] and ev("xs[-1]", xs=[1, 2]) == 2 and ev("xs[5]", xs=[1]) is None
    assert ev("d.k.z", d={"k": {"z": 7}}) == 7 and ev("d['q']", d={}) is None
    assert ev("-a + +b * 2", a=1, b=3) == 5 and ev("not a", a=[]) is True and ev("true and True") is True
    assert ev("[a, 2]", a=1) == [1, 2]
    assert compile_expression("f(x) + 1", {"f"}).evaluate({"x": 2}, {"f": lambda v: v * 10}) == 21
    assert compile_expression("len(x)").evaluate({"x": [1]}, {"len": lambda v: 99}) == 99  # extras first
    with pytest.raises(ExpressionError, match="missing value.*column 1"):
        ev("1 - a", a=None)
    with pytest.raises(ExpressionError, match="unknown name 'zz'"):
        ev("zz + 1", a=1)
    with pytest.raises(ExpressionError, match="ZeroDivisionError"):
        ev("1 / a", a=0)


def test_expressions_evaluate():
    e = compile_expression("label_of if max(softmax(logits)) > 0.5 else coalesce(missing.slot, 'none')")
    assert e.evaluate({"logits": [0.0, 9.0], "label_of": "one", "missing": None}) == "one"
    assert e.evaluate({"logits": [0.0, 0.0], "label_of": "one", "missing": None}) == "none"
    assert compile_expression("topk(x, 2)").evaluate({"x": [0.1, 0.7, 0.2]}) == [1, 2]
    with pytest.raises(ExpressionError, match="missing value"):
        compile_expression("a + 1").evaluate({"a": None})


def test_literal_expressions_keep_their_type_whatever_was_compiled_first() -> None:
    # True == 1 == 1.0 and False == 0 as cache keys: the compiled-expression cache gave `1` -> True
    # once `True` had been compiled (found by a review: output fields {one: 1} answered true).
    order = [True, 1, 1.0, False, 0, 0.0, 1, True]
    got = [compile_expression(v).evaluate({}) for v in order]
    assert got == order
    assert [type(v) for v in got] == [type(v) for v in order]


def test_calls_of_plain_built_ins_give_the_values_the_walk_gave():
    """An expression that is one call of a built-in in PLAIN_RESULTS is not walked by `_to_plain`;
    the values are the same Python types and numbers as walking them gave, and a caller's function
    of the same name (which may return numpy values) is still walked."""
    import numpy as np

    from workbench.pipeline.expressions import PLAIN_RESULTS, _to_plain, compile_expression

    row = np.array([0.5, -1.25, 3.0, 2.0], dtype=np.float32)
    scope = {"v": row, "w": [1, 2, 3], "s": 2.5}
    cases = [
        "softmax(v)", "sigmoid(v)", "argmax(v)", "argmin(v)", "sum(v)", "mean(v)", "norm(v)", "dot(v, v)",
        "cosine(v, v)", "topk(v, 2)", "round(s, 1)", "len(w)", "float(s)", "int(s)", "str(s)", "list(v)",
        "exp(s)", "log(s)",
    ]  # fmt: skip
    for text in cases:
        e = compile_expression(text)
        assert e.plain_call in PLAIN_RESULTS
        got = e.evaluate(scope)
        want = _to_plain(e.fn(scope, None))
        assert got == want and type(got) is type(want), text
        if isinstance(got, list):
            assert [type(x) for x in got] == [type(x) for x in want], text
    assert compile_expression("max(v)").plain_call is None and compile_expression("softmax(v)[0]").plain_call is None
    own = compile_expression("softmax(v)", {"softmax"})
    out = own.evaluate(scope, {"softmax": lambda x: np.asarray(x) * 2})
    assert out == [1.0, -2.5, 6.0, 4.0] and all(type(x) is float for x in out)


def test_repetition_by_star_is_bounded():
    """n11 #25: `len(input.s * input.n)` with {"s": "abcd", "n": 50000000} built 200 MB per request (and a field
    `input.s * 100000000` answered and recorded it): `*` on a string or list makes at most MAX_REPEAT_ITEMS items,
    past that a located error; numbers and numpy arrays multiply as before."""
    import numpy as np

    from workbench.pipeline.expressions import MAX_REPEAT_ITEMS

    def ev(text, **scope):
        return compile_expression(text).evaluate(scope)

    with pytest.raises(ExpressionError, match=r"repeat a string of 4 item\(s\) 50000000 times.*limit is 100,000"):
        ev("len(s * n)", s="abcd", n=50_000_000)
    with pytest.raises(ExpressionError, match=r"repeat a list of 1 item\(s\) 20000000 times.*column 1"):
        ev("n * s", s=[1], n=20_000_000)
    assert ev("s * n", s="ab", n=MAX_REPEAT_ITEMS // 2) == "ab" * (MAX_REPEAT_ITEMS // 2)  # at the limit
    assert ev("s * n", s=[0], n=3) == [0, 0, 0] and ev("a * b", a=10**12, b=10**12) == 10**24
    assert list(ev("x * n", x=np.ones(3), n=10**9)) == [1e9] * 3  # element-wise, not a repetition


async def test_a_pipeline_field_repeating_its_input_fails_located_without_building_it(wb):
    p = Pipeline.from_yaml(
        "name: eamp\nnodes:\n  - {id: a, type: input}\n  - id: o\n    type: output\n"
        '    fields: {v: "len(input.s * input.n)"}\nedges:\n  - {from: a, to: o}\n'
    )
    r = await wb.run(p, {"s": "abcd", "n": 50_000_000})
    assert r.status == "failed" and r.failed_node == "o" and "limit is 100,000" in r.error, r.error
    assert (await wb.run(p, {"s": "abcd", "n": 3})).outputs == {"v": 12}


REF_PIPELINE = """name: reftest
nodes:
  - id: a
    type: input
    schema:
      type: object
      $defs: {word: {type: string}}
      properties: {t: {$ref: "#/definitions/nope"}, w: {$ref: "#/$defs/word"}}
  - id: o
    type: output
    fields: {v: input}
edges:
  - {from: a, to: o}
"""


def test_an_input_schema_ref_that_does_not_resolve_is_refused_at_load():
    """n11 #24: `{"$ref": "#/definitions/nope"}` passed `pipeline check` and PUT (check_schema does not resolve
    references), then every predict answered 500 (_WrappedReferencingError). Refused at the node and the $ref's
    path, by jsonschema's own resolver; a reference that resolves (`#/$defs/word`) is fine, a remote one is not
    fetched."""
    with pytest.raises(PipelineValidationError) as ei:
        Pipeline.from_yaml(REF_PIPELINE, filename="ref.yaml")
    (issue,) = ei.value.issues
    assert (issue.node, issue.field) == ("a", "schema.properties.t.$ref") and issue.line == 8, issue
    assert "'#/definitions/nope' does not resolve: the schema has nothing at that JSON pointer" in issue.message
    fixed = REF_PIPELINE.replace("#/definitions/nope", "#/$defs/word")
    assert Pipeline.from_yaml(fixed).nodes["a"].config["schema"]["properties"]["t"] == {"$ref": "#/$defs/word"}
    remote = REF_PIPELINE.replace("#/definitions/nope", "https://example.com/word.json")
    with pytest.raises(PipelineValidationError, match="other documents are never fetched"):
        Pipeline.from_yaml(remote)


@pytest.mark.parametrize("value", ["1.0e+300", ".inf", "3600.5"])
def test_a_node_time_limit_has_a_ceiling(value):
    """n16: a model node's `timeout_s: 1.0e+300` was accepted; its deadline then killed the model's batcher
    thread (fixed there too), taking down every pipeline that used the model."""
    text = (
        "name: far\nnodes:\n  - {id: in, type: input}\n"
        f"  - {{id: m, type: model, model: demo-digits, inputs: {{pixels: input.x}}, timeout_s: {value}}}\n"
        "edges: [{from: in, to: m}]\n"
    )
    with pytest.raises(PipelineValidationError) as ei:
        Pipeline.from_yaml(text, filename="far.yaml")
    [issue] = [i for i in ei.value.issues if i.field == "timeout_s"]
    assert (issue.node, issue.line) == ("m", 4)
    assert "expected positive seconds, at most 3600" in issue.message
    ok = text.replace(f"timeout_s: {value}", "timeout_s: 3600")
    assert Pipeline.from_yaml(ok).nodes["m"].config["timeout_s"] == 3600


def test_a_bare_yes_is_a_branch_name_not_a_boolean():
    """n16: `when: yes` on a gate's edge was read (YAML 1.1) as the boolean True: no branch the rules assert
    could take it, and the run "succeeded" with {}. Pipeline files are read with YAML 1.2's booleans."""
    text = (
        "name: yes-branch\nnodes:\n  - {id: in, type: input}\n"
        "  - {id: g, type: gate, knowledge_base: demo_digits_gate}\n"
        "  - {id: out, type: output, fields: {x: input.x}}\n"
        "edges: [{from: in, to: g}, {from: g, to: out, when: yes}]\n"
    )
    p = Pipeline.from_yaml(text)
    assert [e.when for e in p.edges if e.source == "g"] == ["yes"]
    assert p.to_yaml() == text  # still byte for byte


@pytest.mark.parametrize("when", ["true", "[go]", "{b: 1}"])
def test_a_when_that_is_no_branch_name_is_located(when):
    text = (
        "name: bad-when\nnodes:\n  - {id: in, type: input}\n"
        "  - {id: g, type: gate, knowledge_base: demo_digits_gate}\n"
        "  - {id: out, type: output, fields: {x: input.x}}\n"
        f"edges:\n  - {{from: in, to: g}}\n  - {{from: g, to: out, when: {when}}}\n"
    )
    with pytest.raises(PipelineValidationError) as ei:
        Pipeline.from_yaml(text, filename="w.yaml")
    [issue] = [i for i in ei.value.issues if i.field == "edges[1].when"]
    assert issue.line == 8 and "expected the name of a gate branch" in issue.message
