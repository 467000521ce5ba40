"""An explanation never lists a fact as its own premise (q11): CLIPS's `modify` keeps the fact index,
so the firing that modified f-1 has f-1 (its earlier version) among its premises; that premise is
explained by what made the earlier version (here the input), not as a cycle "by rule None"."""

from __future__ import annotations

import shutil
from pathlib import Path

CASES = Path(__file__).resolve().parent / "cases" / "explain_q11"


def _walk(d: dict, depth: int = 0):
    yield depth, d
    for p in d.get("premises", []):
        yield from _walk(p, depth + 1)


def test_a_modified_fact_is_explained_by_its_earlier_version(tmp_path) -> None:
    from workbench import Workbench
    from workbench.config import load_settings

    (tmp_path / "kb").mkdir()
    (tmp_path / "pipes").mkdir()
    shutil.copy(CASES / "modq11.clp", tmp_path / "kb")
    shutil.copy(CASES / "modq11.yaml", tmp_path / "pipes")
    settings = load_settings(database_url=f"sqlite:///{tmp_path / 'wb.sqlite3'}")
    with Workbench(
        settings, knowledge_base_dir=tmp_path / "kb", pipeline_dir=tmp_path / "pipes", model_catalog=tmp_path / "none"
    ) as wb:
        r = wb.run_sync("modq11", {"n": 7}, explain=True)
        assert r.ok, r.error
        (done,) = r.explanation["explain_nodes"]["why"]["derivations"]
        assert done["rule"] == "finish"
        (counter,) = done["premises"]
        assert counter["rule"] == "mark" and "(state marked)" in counter["fact"]
        (earlier,) = counter["premises"]
        assert earlier["source"] == "input" and earlier["node"] == "in", earlier
        assert earlier["fact"] == "(counter (n 7))", earlier  # as given, before `mark` modified it
        assert earlier["note"] == "an earlier version of f-1, as firing #0 matched it (modified since)", earlier
        assert "rule" not in earlier and "derivation shown above" not in earlier.get("note", "")
        for _, d in _walk(done):
            assert d.get("source") != "rule" or d.get("rule"), d  # never "by rule None"
