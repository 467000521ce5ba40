"""Regression (n10, newcomer walk-through): `workbench serve` with WORKBENCH_DATABASE_URL naming a
file that is not a database started anyway: banner, "Application startup complete", then a
40-line "start-up loading failed" traceback, and the server stayed up answering 503 to every
route (readyz `failed`) until killed. It now refuses before the banner with one line naming the
database and the reason, exit status 2 (as for an invalid setting), like a busy port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _serve(url: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")} | {"WORKBENCH_DATABASE_URL": url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"workbench serve kept running on an unusable database:\n{err[-2000:]}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_serve_refuses_a_file_that_is_not_a_database(tmp_path):
    bad = tmp_path / "bad.sqlite3"
    bad.write_text("not a database\n" * 20)
    r = _serve(f"sqlite:///{bad}")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"workbench serve: database sqlite:///{bad}: cannot read it (file is not a database)"


def test_serve_refuses_an_unknown_database_kind(tmp_path):
    r = _serve("nosuchdb://somewhere/x")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("workbench serve: database nosuchdb://somewhere/x: ") and "Traceback" not in r.stderr
