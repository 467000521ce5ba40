"""Regression (n12 F13): `workbench kb explain` of a fact modified several times showed each earlier version
as "f-1 (content not recorded)": the trace keeps fact ids only and CLIPS's `modify` keeps the index, so
only the last version was left to read. An engine with `EngineConfig(trace_versions=True)` (what
`kb explain` builds) now keeps the content of every version a retract or modify ends, and the derivation
shows what each firing matched. clipspy, stepped one firing at a time, is the oracle for those versions.
Without `trace_versions` (the default: serving and plain runs) nothing is recorded."""

from __future__ import annotations

import json

import clips
import pytest
from typer.testing import CliRunner

from chaining.explain import forward_derivation
from chaining.forward import EngineConfig, ForwardEngine
from cli.app import app
from rules import Fact, load_knowledge_base

RULES = """
(deftemplate counter (slot n))
(deftemplate done (slot n))
(defrule step ?c <- (counter (n ?n&:(< ?n 3))) => (modify ?c (n (+ ?n 1))))
(defrule finish (counter (n 3)) => (assert (done (n 3))))
"""


def _clips_versions() -> list[str]:
    """The counter's content before each firing and after the last, as CLIPS holds it."""
    env = clips.Environment()
    env.build("(deftemplate counter (slot n))")
    env.build("(deftemplate done (slot n))")
    for rule in RULES.strip().splitlines()[2:]:
        env.build(rule)
    env.reset()
    env.assert_string("(counter (n 0))")
    seen = []
    while True:
        (counter,) = [f for f in env.facts() if f.template.name == "counter"]
        assert counter.index == 1  # modify keeps the index: one id, four versions
        seen.append(f"(counter (n {counter['n']}))")
        if env.run(1) == 0:
            return seen


def _chain(d: dict) -> list[tuple[str | None, str | None]]:
    out = []
    while d["premises"]:
        (d,) = d["premises"]
        out.append((d["fact"], d["rule"]))
    return out


@pytest.mark.parametrize("native", [None, False])  # the C trace recorder when built, and the Python one
def test_each_earlier_version_of_a_modified_fact_is_shown(tmp_path, native) -> None:
    oracle = _clips_versions()
    assert oracle == ["(counter (n 0))", "(counter (n 1))", "(counter (n 2))", "(counter (n 3))", "(counter (n 3))"]
    file = tmp_path / "steps.clp"
    file.write_text(RULES)
    engine = ForwardEngine.from_knowledge_base(
        load_knowledge_base(file), config=EngineConfig(trace_versions=True, native=native)
    )
    try:
        result = engine.evaluate([Fact("counter", {"n": 0})])
    finally:
        engine.close()
    assert [f.rule for f in result.firings] == ["step", "step", "step", "finish"]
    assert {fid: [(k, f.slots["n"]) for k, f in vs] for fid, vs in result.versions.items()} == {
        1: [(0, 0), (1, 1), (2, 2)]
    }
    (done,) = [f.id for f in result.facts if f.template == "done"]
    d = forward_derivation(result, done).to_dict()
    # before the fix: (None, "step"), (None, "step"), (None, None)
    assert _chain(d) == [(oracle[3], "step"), (oracle[2], "step"), (oracle[1], "step"), (oracle[0], None)]


def test_a_retracted_premise_is_shown_with_its_content(tmp_path) -> None:
    file = tmp_path / "gone.clp"
    file.write_text(
        "(deftemplate ticket (slot id))\n(deftemplate served (slot id))\n"
        "(defrule serve ?t <- (ticket (id ?i)) => (retract ?t) (assert (served (id ?i))))\n"
    )
    engine = ForwardEngine.from_knowledge_base(load_knowledge_base(file), config=EngineConfig(trace_versions=True))
    try:
        result = engine.evaluate([Fact("ticket", {"id": 4})])
    finally:
        engine.close()
    (served,) = [f.id for f in result.facts if f.template == "served"]
    (ticket,) = forward_derivation(result, served).to_dict()["premises"]
    assert (ticket["fact"], ticket["source"]) == ("(ticket (id 4))", "given")  # before: None


def test_versions_are_not_recorded_unless_asked_for(tmp_path) -> None:
    file = tmp_path / "steps.clp"
    file.write_text(RULES)
    engine = ForwardEngine.from_knowledge_base(load_knowledge_base(file))
    try:
        asked = engine.evaluate([Fact("counter", {"n": 0})], trace_versions=True)  # this run only
        assert [k for k, _ in asked.versions[1]] == [0, 1, 2]
        result = engine.evaluate([Fact("counter", {"n": 0})])
        assert len(result.events) == 7 and result.versions == {}
        runner = engine._acquire()
        assert not runner.versions._installed  # its callback is not installed
        engine._release(runner)
    finally:
        engine.close()


def test_kb_explain_shows_every_version(tmp_path) -> None:
    file = tmp_path / "steps.clp"
    file.write_text(RULES)
    facts = tmp_path / "facts.json"
    facts.write_text('[{"template": "counter", "slots": {"n": 0}}]')
    r = CliRunner().invoke(
        app, ["kb", "explain", str(file), "--fact", "(done (n ?n))", "--facts", str(facts), "--json"]
    )
    assert r.exit_code == 0, r.output
    (d,) = json.loads(r.stdout)["facts"]
    assert [fact for fact, _ in _chain(d)] == [f"(counter (n {n}))" for n in (3, 2, 1, 0)]
    r = CliRunner().invoke(app, ["kb", "explain", str(file), "--fact", "(done (n ?n))", "--facts", str(facts)])
    assert r.exit_code == 0 and "content not recorded" not in r.stdout, r.stdout


PIPELINE = """
name: steps
nodes:
  - id: in
    type: input
    facts:
      - template: counter
        slots: {n: "input.n"}
  - id: work
    type: rules
    knowledge_base: steps
  - id: why
    type: explain
    targets: [done]
  - id: out
    type: output
    fields: {n: "done.n"}
edges:
  - {from: in, to: work}
  - {from: work, to: why}
  - {from: why, to: out}
"""


def test_a_pipeline_run_asked_to_explain_shows_the_version_a_firing_matched(tmp_path) -> None:
    """The same inside a pipeline's rules node: a run asked to explain records the versions (this run only),
    and the premise that firing #2 matched and modified reads (counter (n 2)), not null."""
    from workbench import Workbench
    from workbench.config import load_settings

    (tmp_path / "kb").mkdir()
    (tmp_path / "pipes").mkdir()
    (tmp_path / "kb" / "steps.clp").write_text(RULES)
    (tmp_path / "pipes" / "steps.yaml").write_text(PIPELINE)
    settings = load_settings(database_url=f"sqlite:///{tmp_path / 'wb.sqlite3'}")
    with Workbench(
        settings, knowledge_base_dir=tmp_path / "kb", pipeline_dir=tmp_path / "pipes", model_catalog=tmp_path / "none"
    ) as wb:
        r = wb.run_sync("steps", {"n": 0}, explain=True)
        assert r.ok and r.outputs == {"n": 3}, r.error
        (done,) = r.explanation["explain_nodes"]["why"]["derivations"]
        assert (done["rule"], done["firing"]) == ("finish", 3)
        (counter,) = done["premises"]
        assert (counter["fact"], counter["rule"], counter["firing"]) == ("(counter (n 3))", "step", 2)
        (earlier,) = counter["premises"]
        # before: "fact": None (the trace keeps fact ids only)
        assert (earlier["fact"], earlier["rule"], earlier["firing"]) == ("(counter (n 2))", "step", 1), earlier
        assert earlier["note"].startswith("earlier version, matched and modified by firing #2")
        engine_runs = wb.run_sync("steps", {"n": 0})  # not asked: no versions recorded, no callback installed
        assert engine_runs.ok
        with wb.library.lease(wb.library.load("steps")) as engine:
            runner = engine._acquire()
            try:
                assert not runner.versions._installed and not runner.trace_versions
            finally:
                engine._release(runner)
