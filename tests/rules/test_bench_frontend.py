"""The `parse` and `startup` rows of `workbench bench rules` (`cli.benchmarks._rules_frontend`), run
alone as a smoke run: their shape and JSON, the C readers named; no timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rules import native_read, native_scan

ROOT = Path(__file__).resolve().parents[2]


def test_the_frontend_rows_run_alone_and_write_json(tmp_path: Path):
    out = tmp_path / "frontend.json"
    done = subprocess.run(
        [sys.executable, "-m", "cli.benchmarks._rules_frontend", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["bench"] == "rules-frontend" and "machine" in doc
    rows = {(r["program"], r["engine"]): r for r in doc["rows"]}
    assert set(rows) == {
        ("parse waltz-50", "workbench"),
        ("parse waltz-50", "clips"),
        ("parse manners-128", "workbench"),
        ("parse manners-128", "clips"),
        ("startup", "workbench"),
        ("startup", "python"),
    }
    manners = rows[("parse manners-128", "workbench")]
    assert manners["facts"] == 321 and manners["rounds"] == 3 and manners["vs_clips"] > 0
    expected = "+".join(n for n, p in (("read", native_read), ("scan", native_scan)) if p.AVAILABLE) or "none"
    assert manners["native"] == expected
    assert rows[("startup", "workbench")]["vs_baseline"] > 0
    assert "bench rules-frontend" in done.stdout


def test_bench_rules_takes_the_rows_from_a_fresh_process():
    """`bench rules` measures them in a process of their own (no numpy thread pool slowing CLIPS)."""
    from cli.benchmarks.rules import _front_end_rows

    found = _front_end_rows(quick=True)
    assert [(r["program"], r["engine"]) for r in found][:2] == [
        ("parse waltz-50", "workbench"),
        ("parse waltz-50", "clips"),
    ]
    assert all(r["rounds"] == 3 for r in found)
