"""Regression: validation refused `value`/`index` in an input node's `foreach` fact mapping (they are bound
per element), and an output field naming a template absent in one run failed instead of giving None."""

from __future__ import annotations

import asyncio

from workbench import Pipeline, Workbench


def test_foreach_names_validate_and_absent_templates_are_none(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "pairs.clp").write_text("(defrule link (edge ?a ?b) (edge ?b ?c) => (assert (path ?a ?c)))\n")
    p = Pipeline("pairs")
    p.add_node(
        "req",
        "input",
        schema={"type": "object", "properties": {"edges": {"type": "array"}}},
        facts=[{"template": "edge", "foreach": "input.edges", "values": ["value[0]", "value[1]"]}],
    )
    p.add_node("link", "rules", knowledge_base="pairs")
    p.add_node("out", "output", fields={"first": "path[0]", "n": "count('path')"})
    p.chain("req", "link", "out")
    with Workbench(knowledge_base_dir=kb, pipeline_dir=tmp_path / "p", model_catalog=tmp_path / "none.yaml") as wb:
        assert wb.validate(p) == []
        r = asyncio.run(wb.run(p, {"edges": [["a", "b"]]}))
        assert r.ok and r.outputs == {"first": None, "n": 0}
        r = asyncio.run(wb.run(p, {"edges": [["a", "b"], ["b", "c"]]}))
        assert r.outputs == {"first": "a", "n": 1}
