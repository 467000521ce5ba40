"""Validation before running: every reference resolves, the graph is sound, errors name node and field."""

from __future__ import annotations

import pytest

from workbench.pipeline import Pipeline, PipelineValidationError

from .conftest import EXAMPLE


def _fixture() -> Pipeline:
    return Pipeline.from_file(EXAMPLE / "digits_review.yaml")


def _issues(wb, p) -> dict[tuple, str]:
    out: dict[tuple, str] = {}
    for i in wb.validate(p):
        out[(i.node, i.field)] = out.get((i.node, i.field), "") + i.message + "\n"
    return out


def test_fixture_pipeline_is_valid(wb):
    assert wb.validate(_fixture(), load_models=True) == []


def test_unknown_knowledge_base_and_model(wb):
    p = _fixture()
    p.nodes["quality"].config["knowledge_base"] = "no_such_kb"
    p.nodes["classify"].config["model"] = "no-such-model"
    got = _issues(wb, p)
    assert "no_such_kb" in got[("quality", "knowledge_base")] and "looked for" in got[("quality", "knowledge_base")]
    assert "no model named 'no-such-model'" in got[("classify", "model")]


def test_invalid_rule_file_reports_located_diagnostics(wb, dirs):
    kb_dir, _ = dirs
    (kb_dir / "image_gate.clp").write_text("(defrule broken (image (ink ?i)) => (assert (route (branch classify)))\n")
    got = _issues(wb, _fixture())
    assert "image_gate.clp:2:1: unexpected end of file" in got[("quality", "knowledge_base")]


def test_cycle_and_disconnected_nodes(wb):
    p = _fixture()
    p.connect("review", "classify")
    got = _issues(wb, p)
    assert any(f == "edges" and "cycle" in m for (_, f), m in got.items())
    q = _fixture()
    q.add_node("lonely", "rules", knowledge_base="image_gate")
    got = _issues(wb, q)
    assert "not connected" in got[("lonely", "edges")]


def test_template_on_edge_must_exist_in_the_receiving_knowledge_base(wb):
    p = _fixture()
    p.nodes["classify"].config["facts"][0]["slots"]["confidence_band"] = "'high'"
    got = _issues(wb, p)
    msg = got[("review", "knowledge_base")]
    assert "edge classify -> review" in msg and "no slot(s) confidence_band" in msg
    q = _fixture()
    q.nodes["classify"].config["facts"].append({"template": "novel", "slots": {"x": "1"}})
    assert "template 'novel'" in _issues(wb, q)[("review", "knowledge_base")]


def test_names_in_expressions_resolve(wb):
    p = _fixture()
    p.nodes["result"].config["fields"]["digit"] = "predicton.digit"
    p.nodes["classify"].config["inputs"]["pixels"] = "input.pixel"
    got = _issues(wb, p)
    assert "unknown name 'predicton'" in got[("result", "fields.digit")]
    assert "input field 'pixel' is not in the input schema" in got[("classify", "inputs.pixels")]


def test_model_inputs_and_outputs_checked_against_the_signature(wb):
    p = _fixture()
    p.nodes["classify"].config["inputs"] = {"image": "input.pixels"}
    p.nodes["classify"].config["facts"][0]["slots"]["score"] = "max(probs)"
    got = _issues(wb, p)
    assert "has no input 'image'" in got[("classify", "inputs.image")]
    assert "'pixels' (FP32 (float32) [-1, 64]) is not given" in got[("classify", "inputs")]
    assert "unknown name 'probs'" in got[("classify", "facts[0].slots.score")]


def test_gate_decision_and_output_schema(wb):
    p = _fixture()
    p.nodes["quality"].config["decision"] = {"template": "route", "slot": "lane"}
    p.nodes["result"].config["schema"]["required"] = ["action", "confidence"]
    got = _issues(wb, p)
    assert "no slot 'lane'" in got[("quality", "decision.slot")]
    assert "required output 'confidence'" in got[("result", "schema.required")]


def test_running_an_invalid_pipeline_raises_with_all_issues(wb):
    p = _fixture()
    p.nodes["quality"].config["knowledge_base"] = "nope"
    with pytest.raises(PipelineValidationError) as ei:
        wb.run_sync(p, {"pixels": [0.0] * 64})
    assert ei.value.issues[0].node == "quality" and ei.value.issues[0].field == "knowledge_base"


def test_an_edge_into_a_knowledge_base_must_carry_facts(wb):
    p = _fixture()
    del p.nodes["image"].config["facts"]
    got = _issues(wb, p)
    assert "a gate node consumes facts, but this input node declares none" in got[("image", "facts")]
