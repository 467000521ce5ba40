"""Forward firings name a rule as the knowledge base keys it (q12): `MODULE::name` when rules of two
modules share the name, the bare name otherwise. Both trace recorders (C and Python) showed the bare
name, so the firings of TRIAGE::classify and BILLING::classify read as one rule's. CLIPS's own
`(watch rules)` prints bare names too (checked below): the module is told by the focus, whose agenda
CLIPS fires. Oracle: real CLIPS through clipspy (the rules it holds and the order it fires them)."""

from __future__ import annotations

import clips
import pytest

import rules
from chaining.forward import EngineConfig, ForwardEngine, native_trace

SOURCE = """
(defmodule MAIN (export ?ALL))
(deftemplate MAIN::finding (slot kind) (slot value))
(defrule MAIN::start (finding (kind start)) => (focus TRIAGE BILLING OTHER))
(defmodule TRIAGE (import MAIN ?ALL))
(defrule TRIAGE::classify (finding (kind fever) (value ?v&:(> ?v 38))) => (assert (finding (kind urgent) (value yes))))
(defmodule BILLING (import MAIN ?ALL))
(defrule classify (finding (kind visit) (value ?v)) => (assert (finding (kind invoice) (value ?v))))
(defmodule OTHER (import MAIN ?ALL))
(defrule unique (finding (kind visit) (value ?v)) => (assert (finding (kind other) (value ?v))))
"""
FACTS = [
    {"template": "finding", "slots": {"kind": "start"}},
    {"template": "finding", "slots": {"kind": "fever", "value": 39}},
    {"template": "finding", "slots": {"kind": "visit", "value": 12}},
]
EXPECTED = ["start", "TRIAGE::classify", "BILLING::classify", "unique"]


class _Watch(clips.Router):
    def __init__(self):
        super().__init__("q12-watch", 50)
        self.text: list[str] = []

    def query(self, name: str) -> bool:
        return name in ("stdout", "wtrace")

    def write(self, name: str, message: str) -> None:
        self.text.append(message)


def test_clipspy_fires_these_rules_and_watch_prints_bare_names(tmp_path) -> None:
    path = tmp_path / "kb.clp"
    path.write_text(SOURCE)
    env = clips.Environment()
    watch = _Watch()
    env.add_router(watch)
    env.load(str(path))
    assert [str(n) for n in env.eval("(get-defrule-list *)")] == [
        "MAIN::start",
        "TRIAGE::classify",
        "BILLING::classify",
        "OTHER::unique",
    ]
    env.eval("(watch rules)")
    env.reset()
    for f in ("(finding (kind start))", "(finding (kind fever) (value 39))", "(finding (kind visit) (value 12))"):
        env.assert_string(f)
    modules = []
    while True:
        nxt = next(iter(env.activations()), None)
        if nxt is None:
            break
        modules.append(str(env.eval("(get-focus)")))
        env.run(1)
    fired = [line.split()[2].rstrip(":") for line in "".join(watch.text).splitlines() if line.startswith("FIRE")]
    assert fired == ["start", "classify", "classify", "unique"]  # CLIPS's own trace: bare names
    assert modules == ["MAIN", "TRIAGE", "BILLING", "OTHER"]  # the focus while each fired: the rule's module
    assert [f"{m}::{r}" for m, r in zip(modules, fired)] == [str(n) for n in env.eval("(get-defrule-list *)")]


@pytest.mark.parametrize("native", [True, False], ids=["c-recorder", "python-recorder"])
def test_firings_name_the_module_where_the_name_is_shared(native: bool) -> None:
    if native and not native_trace.AVAILABLE:
        pytest.skip(f"C trace recorder: {native_trace.UNAVAILABLE}")
    kb = rules.knowledge_base_from_text("modules", SOURCE)
    assert list(kb.rules) == EXPECTED  # the knowledge base's keys
    engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1, native=native))
    try:
        assert engine._idle[0].recorder.kind == ("native" if native else "python")
        for _ in range(3):  # the C recorder reads a rule's basis directly after its first firing
            result = engine.evaluate(FACTS)
            assert [f.rule for f in result.firings] == EXPECTED
    finally:
        engine.close()


def test_pipeline_trace_and_explanation_name_the_module(tmp_path) -> None:
    from workbench import Workbench
    from workbench.config import load_settings

    (tmp_path / "kb").mkdir()
    (tmp_path / "pipes").mkdir()
    (tmp_path / "kb" / "triage_q12.clp").write_text(SOURCE)
    (tmp_path / "pipes" / "triage_q12.yaml").write_text(
        """name: triage_q12
nodes:
  - id: in
    type: input
    facts:
      - {template: finding, slots: {kind: "'start'"}}
      - {template: finding, slots: {kind: "'fever'", value: "input.fever"}}
  - id: work
    type: rules
    knowledge_base: triage_q12
  - id: why
    type: explain
    targets: [finding]
  - id: out
    type: output
    fields: {n: "len(facts('finding'))"}
edges:
  - {from: in, to: work}
  - {from: work, to: why}
  - {from: why, to: out}
"""
    )
    settings = load_settings(database_url=f"sqlite:///{tmp_path / 'wb.sqlite3'}")
    with Workbench(
        settings, knowledge_base_dir=tmp_path / "kb", pipeline_dir=tmp_path / "pipes", model_catalog=tmp_path / "none"
    ) as wb:
        r = wb.run_sync("triage_q12", {"fever": 39}, explain=True)
        assert r.ok, r.error
        trace = wb.get_trace(r.run_id)
        firings = [e["payload"]["rule"] for e in trace if e["kind"] == "rule_firing"]
        assert firings == ["start", "TRIAGE::classify"]
        derived = {d["fact"]: d for d in r.explanation["explain_nodes"]["why"]["derivations"]}
        assert derived["(finding (kind urgent) (value yes))"]["rule"] == "TRIAGE::classify"
