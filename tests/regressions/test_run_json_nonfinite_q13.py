"""Regression: `workbench run --json` (and the JSON Lines of `--input-file`) wrote a float that is not
finite as a bare `NaN` / `Infinity` token, which is not JSON, while stored runs, the API and
`kb run --json` write the strings "NaN", "Infinity" and "-Infinity" (`rules.facts.NON_FINITE_JSON`).
The store's JSON writer kept its own copy of that mapping; it now uses the one in rules.facts.
Oracle for the values: tests/regressions/test_nonfinite_json_q12.py (real CLIPS computes them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pydantic_core
from nonfinite_cases import CASES, WANT, strict_json  # noqa: E402

from rules.facts import NON_FINITE_JSON

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "kb").mkdir(exist_ok=True)
    (tmp_path / "pipes").mkdir(exist_ok=True)
    shutil.copy(CASES / "nonfinite.clp", tmp_path / "kb")
    shutil.copy(CASES / "nonfinite.yaml", tmp_path / "pipes")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")} | {
        "WORKBENCH_DATABASE_URL": f"sqlite:///{tmp_path / 'wb.sqlite3'}",
        "WORKBENCH_KNOWLEDGE_BASE_DIR": str(tmp_path / "kb"),
        "WORKBENCH_PIPELINE_DIR": str(tmp_path / "pipes"),
    }
    return subprocess.run(
        [sys.executable, "-m", "cli", "run", "nonfinite", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_run_json_writes_the_strings(tmp_path):
    r = _run(tmp_path, "--input", '{"x": 2}', "--json")
    assert r.returncode == 0, r.stderr
    doc = strict_json(r.stdout)
    assert doc["status"] == "succeeded" and doc["outputs"] == WANT

    (tmp_path / "in.jsonl").write_text('{"x": 2}\n{"x": 2}\n')
    r = _run(tmp_path, "--input-file", str(tmp_path / "in.jsonl"))
    assert r.returncode == 0, r.stderr
    lines = [strict_json(line) for line in r.stdout.splitlines()]
    assert [line["outputs"] for line in lines] == [WANT, WANT]

    r = _run(tmp_path, "--input", '{"x": 2}')  # the outputs alone, pretty-printed
    assert r.returncode == 0, r.stderr
    assert strict_json(r.stdout) == WANT


def test_the_store_writer_falls_back_to_the_same_mapping(monkeypatch):
    from workbench.store import database

    assert not hasattr(database, "NON_FINITE")  # one home: rules.facts.NON_FINITE_JSON

    def refuse(*args, **kwargs):
        raise pydantic_core.PydanticSerializationError("refused")

    monkeypatch.setattr(database.pydantic_core, "to_json", refuse)
    text = database.json_text({"a": [float("nan"), float("inf"), -float("inf"), 1.5]})
    assert strict_json(text) == {"a": [NON_FINITE_JSON["nan"], NON_FINITE_JSON["inf"], NON_FINITE_JSON["-inf"], 1.5]}
