"""Regression (n10, newcomer walk-through): a database that cannot be used or an invalid setting
ended `workbench runs list`, `pipeline list`, `run`, `model list`... with a 30-line traceback whose
last line held the message. Now: `workbench: MESSAGE` on stderr, exit status 1, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _workbench(args: list[str], **env: str) -> subprocess.CompletedProcess:
    """The real console entry point (`python -m cli` runs `cli.main`), in a child process."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")} | env
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=ROOT, env=full, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("args", [["runs", "list"], ["pipeline", "list"], ["runs", "show", "abc"]])
def test_corrupt_sqlite_file_is_one_line(tmp_path, args):
    bad = tmp_path / "bad.sqlite3"
    bad.write_text("this is not a database\n" * 10)
    r = _workbench(args, WORKBENCH_DATABASE_URL=f"sqlite:///{bad}")
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == f"workbench: database sqlite:///{bad}: cannot read it (file is not a database)"


def test_invalid_setting_is_named_without_traceback(tmp_path):
    r = _workbench(["runs", "list"], WORKBENCH_DEVICE="tpu", WORKBENCH_DATABASE_URL=f"sqlite:///{tmp_path / 'x.db'}")
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.splitlines() == [
        "workbench: invalid settings:",
        "  WORKBENCH_DEVICE='tpu': Input should be 'auto', 'cpu' or 'cuda'",
    ]


def test_other_exceptions_still_show_their_traceback():
    """Only the two message-only kinds are shortened: a bug elsewhere keeps its traceback."""
    from cli.app import _user_error
    from workbench.config import ConfigError
    from workbench.store.database import StoreError

    assert _user_error(StoreError("x")) and _user_error(ConfigError("y"))
    assert not _user_error(RuntimeError("z")) and not _user_error(KeyError("k"))
