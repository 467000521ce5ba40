"""Regression (issue 20): a model summary line listed every fact the model gave (~2,000 characters
for the intent router), and `overrides` listed post-process nodes that only added facts."""

from __future__ import annotations

from workbench import Pipeline, Workbench
from workbench.pipeline.explanation import summary_lines

RULES = """
(deftemplate reading (slot value (type NUMBER)))
(deftemplate note (slot text (type STRING)))
(defrule annotate (reading (value ?v)) => (assert (note (text "seen"))))
(defrule clamp ?r <- (reading (value ?v&:(> ?v 10))) => (modify ?r (value 10)))
"""


def _pipeline() -> Pipeline:
    p = Pipeline("clamp")
    p.add_node(
        "req",
        "input",
        schema={"type": "object", "properties": {"v": {"type": "number"}}},
        facts=[{"template": "reading", "slots": {"value": "input.v"}}],
    )
    p.add_node("post", "postprocess", knowledge_base="clamp")
    p.add_node("out", "output", fields={"v": "reading.value"})
    p.connect("req", "post")
    p.connect("post", "out")
    return p


def test_only_real_overrides_are_listed(tmp_path):
    (tmp_path / "clamp.clp").write_text(RULES)
    with Workbench(knowledge_base_dir=tmp_path, pipeline_dir=tmp_path / "p", model_catalog=tmp_path / "n.yaml") as wb:
        added_only = wb.run_sync(_pipeline(), {"v": 3}, explain=True)
        changed = wb.run_sync(_pipeline(), {"v": 30}, explain=True)
    assert added_only.explanation["overrides"] == []
    assert not any("overrode" in line for line in added_only.explanation["summary"])
    [override] = changed.explanation["overrides"]
    assert override["removed"] == ["(reading (value 30))"] and "(reading (value 10))" in override["added"]
    assert any(line.startswith("post overrode (reading (value 30))") for line in changed.explanation["summary"])


def test_a_model_summary_names_a_few_facts_and_counts_the_rest():
    facts = [f"(intent-score (intent i{i}) (score 0.{i}))" for i in range(13)]
    expl = {
        "gates": [],
        "skipped_models": [],
        "overrides": [],
        "derivations": [],
        "model_calls": [{"model": "router", "version": "abc", "node": "r", "batch_size": 1, "facts": facts}],
    }
    [line] = summary_lines(expl)
    assert line.endswith("gave 13 facts: " + "; ".join(facts[:3]) + " (+10 more)")
    assert len(line) < 200
