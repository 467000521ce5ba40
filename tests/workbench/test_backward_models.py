"""Model-backed relations (`;@model`, issue 18 item 8): a catalogue model answers the prover's
questions, every question pending in one query in one predict call, alike from `Workbench.ask`,
pipeline goal nodes, the API's ask endpoint (a real uvicorn server) and `kb ask`; `kb check`
locates an unknown model or a bad mapping."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from chaining.backward import PersonProvider
from cli.app import app
from workbench import Workbench

ROOT = Path(__file__).resolve().parents[2]

RISK_KB = """
;@model risk-net input.features=features labels=low,high threshold=0.6
(deftemplate risk (slot applicant) (multislot features) (slot level))
(deftemplate applicant (slot name) (multislot features))
(deftemplate payment (slot id) (slot amount))

;@model flag-net suspicious input=1 threshold=0.5

(defrule approve "low risk applicants are approved"
   (applicant (name ?n) (features $?f))
   (risk (applicant ?n) (features $?f) (level low))
   =>
   (assert (approved ?n)))

(defrule hold "suspicious payments are held"
   (payment (id ?i) (amount ?a))
   (suspicious ?a)
   =>
   (assert (held ?i)))
"""

# (name, features): risk-net says "high" when the second feature exceeds the first
APPLICANTS = [("ann", [3.0, 1.0]), ("bob", [1.0, 3.0]), ("cy", [2.0, 0.5]), ("dee", [0.0, 2.0]), ("eve", [5.0, 1.0])]
LOW_RISK = {"ann", "cy", "eve"}
PAYMENTS = [("p1", 50), ("p2", 5000), ("p3", 20), ("p4", 9000)]  # flag-net: suspicious above 1000


class RiskNet(torch.nn.Module):
    """Class scores (logits) [low, high] from two features; records each batch size it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        self.batches.append(int(features.shape[0]))
        d = features[:, 1] - features[:, 0]
        return torch.stack([-d, d], dim=-1) * 4.0


class FlagNet(torch.nn.Module):
    """One logit per amount: positive above 1000."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def forward(self, amount: torch.Tensor) -> torch.Tensor:
        self.batches.append(int(amount.shape[0]))
        return (amount - 1000.0) / 100.0


def applicant_facts() -> list[dict]:
    return [{"template": "applicant", "slots": {"name": n, "features": f}} for n, f in APPLICANTS]


def payment_facts() -> list[dict]:
    return [{"template": "payment", "slots": {"id": i, "amount": a}} for i, a in PAYMENTS]


def register(wb: Workbench) -> tuple[RiskNet, FlagNet]:
    risk, flag = RiskNet(), FlagNet()
    wb.register_model("risk-net", risk, example_inputs={"features": np.zeros((1, 2), np.float32)})
    wb.register_model("flag-net", flag, example_inputs={"amount": np.zeros((1, 1), np.float32)})
    risk.batches.clear()  # the forward pass that read the signature
    flag.batches.clear()
    return risk, flag


@pytest.fixture
def wb(tmp_path: Path):
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    (kb_dir / "risk.clp").write_text(RISK_KB)
    (tmp_path / "pipelines").mkdir()
    with Workbench(
        knowledge_base_dir=kb_dir, pipeline_dir=tmp_path / "pipelines", model_catalog=tmp_path / "n.yaml"
    ) as w:
        yield w


def never_ask(q) -> str:
    raise AssertionError(f"the person was asked {q.text}; the model answers this relation")


def test_every_pending_question_goes_to_the_model_in_one_predict_call(wb) -> None:
    risk, _ = register(wb)
    r = wb.ask("risk", "(approved ?n)", applicant_facts(), all=True, provider=PersonProvider(never_ask))
    assert {a["bindings"]["n"] for a in r["answers"]} == LOW_RISK
    assert risk.batches == [len(APPLICANTS)]  # five questions, one forward pass of batch 5
    assert [(c["model"], c["batch"]) for c in r["model_calls"]] == [("risk-net", 5)]
    assert r["model_calls"][0]["version"] == wb.get_model("risk-net").version
    asked = r["answers"][0]["proof"]["premises"][1]
    assert asked["kind"] == "asked" and asked["source"] == "model" and "risk-net@" in asked["detail"]


def test_ordered_relation_is_a_yes_no_question_to_the_model(wb) -> None:
    _, flag = register(wb)
    r = wb.ask("risk", "(held ?i)", payment_facts(), all=True)
    assert {a["bindings"]["i"] for a in r["answers"]} == {"p2", "p4"}
    assert flag.batches == [len(PAYMENTS)]


def test_questions_below_the_threshold_are_unknown(wb, tmp_path: Path) -> None:
    risk, _ = register(wb)
    text = RISK_KB.replace("threshold=0.6", "threshold=0.999999")  # cy: p(low) = 0.999994 is not sure enough
    (tmp_path / "kb" / "risk.clp").write_text(text)
    r = wb.ask("risk", "(approved ?n)", applicant_facts(), all=True)
    assert {a["bindings"]["n"] for a in r["answers"]} == {"ann", "eve"}
    assert risk.batches == [5]


def test_goal_node_asks_the_model_and_records_its_version(wb, tmp_path: Path) -> None:
    risk, _ = register(wb)
    (tmp_path / "pipelines" / "approvals.yaml").write_text(
        """
name: approvals
nodes:
  - id: people
    type: input
    schema: {type: object, required: [applicants]}
    facts:
      - template: applicant
        foreach: input.applicants
        slots: {name: "value[0]", features: "value[1]"}
  - id: approved
    type: goal
    knowledge_base: risk
    goal: "(approved ?n)"
    all: true
  - id: out
    type: output
    fields:
      approved: "len(approved.answers)"
edges:
  - {from: people, to: approved}
  - {from: approved, to: out}
"""
    )
    run = wb.run_sync("approvals", {"applicants": [[n, f] for n, f in APPLICANTS]})
    assert run.outputs["approved"] == len(LOW_RISK), run
    assert risk.batches == [5]
    assert run.model_versions["risk-net"] == wb.get_model("risk-net").version


def test_api_ask_endpoint_answers_with_the_model(wb, tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "api"))
    from api_live import make_settings, serve

    from workbench.serving import Serving

    risk, _ = register(wb)
    settings = make_settings(tmp_path)
    server = serve(Serving(wb, settings=settings, load_models=False, serve_demo_lm=False), settings)
    try:
        r = httpx.post(
            server.url + "/v1/kb/risk/ask",
            json={"goal": "(approved ?n)", "facts": applicant_facts(), "all": True},
            timeout=60,
        )
    finally:
        server.stop()
    assert r.status_code == 200, r.text
    doc = r.json()
    assert {a["bindings"]["n"] for a in doc["answers"]} == LOW_RISK
    assert [(c["model"], c["batch"]) for c in doc["model_calls"]] == [("risk-net", 5)]
    assert risk.batches == [5]


def _torchscript_catalogue(tmp_path: Path) -> Path:
    from neural.loaders import infer_signature, save_torchscript

    class Risk(torch.nn.Module):
        def forward(self, features: torch.Tensor) -> torch.Tensor:
            d = features[:, 1] - features[:, 0]
            return torch.stack([-d, d], dim=-1) * 4.0

    module = Risk()
    sig = infer_signature(module, {"features": np.zeros((1, 2), np.float32)}, {})
    save_torchscript(torch.jit.script(module), tmp_path / "risk.pt", sig)
    cat = tmp_path / "catalog.yaml"
    cat.write_text(
        "models:\n  - {name: risk-net, format: torchscript, path: risk.pt, task: classification}\n"
        "  - {name: flag-net, format: torchscript, path: risk.pt, task: classification}\n"
    )
    return cat


def test_kb_ask_loads_the_model_from_the_catalogue(tmp_path: Path) -> None:
    cat = _torchscript_catalogue(tmp_path)
    kb = tmp_path / "risk.clp"
    kb.write_text(RISK_KB)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(applicant_facts()))
    r = CliRunner().invoke(
        app, ["kb", "ask", str(kb), "(approved ?n)", "--all", "--facts", str(facts), "--models", str(cat), "--json"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert {a["bindings"]["n"] for a in doc["answers"]} == LOW_RISK
    assert [(c["model"], c["batch"]) for c in doc["model_calls"]] == [("risk-net", 5)]
    assert all(q["source"] == "model" and q["model"] == "risk-net" for q in doc["questions"])
    text = CliRunner().invoke(
        app, ["kb", "ask", str(kb), "(approved ?n)", "--all", "--facts", str(facts), "--models", str(cat)]
    )
    assert text.exit_code == 0 and "answered by model" in text.stdout and "one call, batch 5" in text.stdout


def test_kb_ask_names_an_unknown_model_where_it_is_declared(tmp_path: Path) -> None:
    cat = _torchscript_catalogue(tmp_path)
    kb = tmp_path / "risk.clp"
    kb.write_text(RISK_KB.replace("risk-net input", "risk-nett input"))
    r = CliRunner().invoke(app, ["kb", "ask", str(kb), "(approved ann)", "--models", str(cat)])
    assert r.exit_code == 1
    assert f"{kb}:2:1: no model named 'risk-nett'" in r.stderr and "did you mean risk-net?" in r.stderr


def test_kb_check_locates_an_unknown_model_and_a_bad_mapping(tmp_path: Path) -> None:
    kb = tmp_path / "digits.clp"
    kb.write_text(
        ";@model demo-digit input.pixels=pixels\n"
        "(deftemplate digit (slot image) (multislot pixels) (slot label))\n"
        ";@model demo-digits input.pixel=pixels output=logit\n"
        "(deftemplate digit2 (slot image) (multislot pixels) (slot label))\n"
    )
    r = CliRunner().invoke(app, ["kb", "check", str(kb)])
    assert r.exit_code == 1, r.output
    out = r.stdout
    assert f"{kb}:1:1: no model named 'demo-digit'" in out and "did you mean demo-digits?" in out
    assert f"{kb}:3:1: model 'demo-digits' has no input 'pixel' (inputs: pixels)" in out
    assert f"{kb}:3:1: model 'demo-digits' has no output 'logit' (outputs: logits)" in out
    kb.write_text(";@model demo-digits input.pixels=label\n(deftemplate digit (multislot pixels) (slot label))\n")
    r = CliRunner().invoke(app, ["kb", "check", str(kb)])  # checked with the rule file, before any model loads
    assert r.exit_code == 1 and f"{kb}:1:1: ;@model input label is the slot the model answers" in r.stdout
    good = tmp_path / "good.clp"
    good.write_text(";@model demo-digits input.pixels=pixels\n(deftemplate digit (multislot pixels) (slot label))\n")
    ok = CliRunner().invoke(app, ["kb", "check", str(good)])
    assert ok.exit_code == 0, ok.output
