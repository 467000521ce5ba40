"""Regression (n11, newcomer walk-through): `workbench pipeline save` of a missing file or a folder
ended in a FileNotFoundError / IsADirectoryError traceback, `save FILE --stage prod` in a ValueError
traceback (after storing the version), and `pipeline check|show MISSING.yaml` looked the path up as a
pipeline name ("no file nonexistent.yaml.yaml in the pipeline folder"). Now one line naming the file
and the reason (exit 1), a bad --stage refused before anything is stored (exit 2). Real store file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _workbench(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    env["WORKBENCH_DATABASE_URL"] = f"sqlite:///{tmp / 'wb.sqlite3'}"
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["pipeline", "save", "{tmp}/missing.yaml"], "{tmp}/missing.yaml: cannot read it (no such file)"),
        (["pipeline", "save", "{tmp}"], "{tmp}: cannot read it (a folder, not a pipeline file)"),
        (["pipeline", "check", "{tmp}/missing.yaml"], "{tmp}/missing.yaml: cannot read it (no such file)"),
        (["pipeline", "show", "{tmp}/missing.yaml"], "{tmp}/missing.yaml: cannot read it (no such file)"),
    ],
)
def test_a_missing_file_or_a_folder_is_one_line(tmp_path, args, line):
    r = _workbench([a.format(tmp=tmp_path) for a in args], tmp_path)
    assert r.returncode == 1, r.stderr
    out = (r.stdout + r.stderr).strip()
    assert "Traceback" not in out, out
    assert out == line.format(tmp=tmp_path)


def test_a_bad_stage_is_refused_before_the_version_is_stored(tmp_path):
    r = _workbench(["pipeline", "save", "pipelines/demo_intents.yaml", "--stage", "prod"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == "--stage 'prod': expected one of production, staging"
    versions = _workbench(["pipeline", "versions", "demo_intents"], tmp_path)
    assert versions.returncode == 1 and "no stored versions" in versions.stderr, versions.stderr


def test_names_and_files_still_resolve(tmp_path):
    by_file = _workbench(["pipeline", "check", "pipelines/demo_intents.yaml"], tmp_path)
    assert by_file.returncode == 0, by_file.stdout + by_file.stderr
    by_name = _workbench(["pipeline", "check", "demo_intents"], tmp_path)
    assert by_name.returncode == 0, by_name.stdout + by_name.stderr
