"""An explanation never shows a fact as its own premise, nor a modified fact's later content as what
an earlier firing matched (q12). CLIPS's `modify` keeps the fact index, so the firing that modified
f-1 has f-1 (its earlier version) among its premises, and a firing that matched f-1 before a later
`modify` has the same id among its premises too. Such a premise is shown as the earlier version: what
made it (the firing before, or the fact as given) and no further history, so a fact modified N times
costs one node per use, not N derivations (the stored explanation of demo_digits stays its size)."""

from __future__ import annotations

import shutil
from pathlib import Path

import clips

CASES = Path(__file__).resolve().parent / "cases" / "explain_q12"
ROOT = Path(__file__).resolve().parents[2]


def _walk(d: dict, parent: dict | None = None):
    yield parent, d
    for p in d.get("premises", []):
        yield from _walk(p, d)


def _check_no_self_premise(d: dict) -> None:
    for parent, node in _walk(d):
        assert node.get("source") != "rule" or node.get("rule"), node  # never "by rule None"
        assert "derivation shown above" not in (node.get("note") or ""), node
        if parent is not None and node.get("fact_id") == parent.get("fact_id") and node.get("node") == parent["node"]:
            assert node["fact"] is None or node["fact"] != parent["fact"], (parent, node)  # not itself
            assert node.get("firing") is None or node["firing"] < parent["firing"], (parent, node)


def test_clipspy_modify_keeps_the_index_and_fires_in_this_order() -> None:
    """The oracle: CLIPS fires note-new, mark, finish and `modify` keeps f-1."""
    env = clips.Environment()
    env.load(str(CASES / "modq12.clp"))
    env.reset()
    env.assert_string("(counter (n 7))")
    fired = []
    while True:
        nxt = next(iter(env.activations()), None)
        if nxt is None:
            break
        fired.append(nxt.name)
        env.run(1)
    assert fired == ["note-new", "mark", "finish"]
    (counter,) = [f for f in env.facts() if f.template.name == "counter"]
    assert counter.index == 1 and counter["state"] == "marked"


def test_a_modified_fact_is_explained_by_its_earlier_version(tmp_path) -> None:
    from workbench import Workbench
    from workbench.config import load_settings

    (tmp_path / "kb").mkdir()
    (tmp_path / "pipes").mkdir()
    shutil.copy(CASES / "modq12.clp", tmp_path / "kb")
    shutil.copy(CASES / "modq12.yaml", tmp_path / "pipes")
    settings = load_settings(database_url=f"sqlite:///{tmp_path / 'wb.sqlite3'}")
    with Workbench(
        settings, knowledge_base_dir=tmp_path / "kb", pipeline_dir=tmp_path / "pipes", model_catalog=tmp_path / "none"
    ) as wb:
        r = wb.run_sync("modq12", {"n": 7}, explain=True)
        assert r.ok, r.error
        (done,) = r.explanation["explain_nodes"]["why"]["derivations"]
        _check_no_self_premise(done)
        assert (done["rule"], done["firing"]) == ("finish", 2)
        counter, seen = done["premises"]
        assert (counter["rule"], counter["firing"], counter["fact"]) == ("mark", 1, "(counter (n 7) (state marked))")
        (earlier,) = counter["premises"]  # what `mark` matched: the counter as the input gave it
        assert earlier == {
            "fact": "(counter (n 7))",
            "node": "in",
            "source": "input",
            "note": "earlier version, matched and modified by firing #1",
        }
        assert (seen["rule"], seen["firing"]) == ("note-new", 0)
        (before,) = seen["premises"]  # note-new matched the counter before `mark` changed it
        assert before["fact"] == "(counter (n 7))" and before["source"] == "input"
        assert before["note"] == "earlier version, matched by firing #0, modified by firing #1"


def test_demo_digits_reading_is_not_its_own_premise(tmp_path) -> None:
    """The reading (f-20 in an 8-digit accept) is modified once per digit and once more to complete:
    its derivation names the firing that made the version it matched, then stops."""
    from workbench import Workbench
    from workbench.config import load_settings
    from workbench.demo.digits_data import heldout_sequences

    (seq,) = heldout_sequences(limit=1)  # read right: accepted
    settings = load_settings(database_url=f"sqlite:///{tmp_path / 'wb.sqlite3'}")
    with Workbench(
        settings,
        knowledge_base_dir=ROOT / "knowledge_bases",
        pipeline_dir=ROOT / "pipelines",
        model_catalog=ROOT / "models" / "catalog.yaml",
    ) as wb:
        r = wb.run_sync("demo_digits", seq.to_input(), explain=True)
        assert r.ok and r.outputs["action"] == "accept", (r.error, r.outputs)
        (decision,) = r.explanation["explain_nodes"]["why"]["derivations"]
        _check_no_self_premise(decision)
        readings = [d for _, d in _walk(decision) if d.get("rule") == "reading-complete"]
        assert readings
        for reading in readings:
            earlier = next(p for p in reading["premises"] if p.get("fact_id") == reading["fact_id"])
            assert "premises" not in earlier  # the version is named, not expanded
            # its content since n12 F13 (a run asked to explain records fact versions): the reading before
            # `reading-complete` modified it
            assert earlier["fact"] == reading["fact"].replace("(complete yes)", "(complete no)") != reading["fact"]
            assert (earlier["rule"], earlier["firing"]) == ("read-next-digit", reading["firing"] - 1)
            assert earlier["note"] == (
                f"earlier version, matched and modified by firing #{reading['firing']}; its history not expanded"
            )
