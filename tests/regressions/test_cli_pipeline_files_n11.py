"""Regression (n11, newcomer walk-through): `workbench pipeline save` of a missing file or a folder
ended in a FileNotFoundError / IsADirectoryError traceback, `save FILE --stage prod` in a ValueError
traceback (after storing the version), and `pipeline check|show MISSING.yaml` looked the path up as a
pipeline name ("no file nonexistent.yaml.yaml in the pipeline folder"). Now one line naming the file
and the reason (exit 1), a bad --stage refused before anything is stored (exit 2). Real store file."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app

ROOT = Path(__file__).resolve().parents[2]


class Result:
    """A command's exit status and its stdout and stderr, as a terminal shows them."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def workbench(monkeypatch):
    """`workbench ARGS` in this process (typer's CliRunner; a subprocess per call took ~90 s for the
    file), from the repository root; tests/conftest.py gives each test a store file of its own and no
    other WORKBENCH_ variable. An exception that escapes the command, which a terminal would show as
    a traceback, fails the test."""
    monkeypatch.chdir(ROOT)

    def run(args: list[str]) -> Result:
        r = CliRunner().invoke(app, args)
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            shown = "".join(traceback.format_exception(r.exception))
            pytest.fail(f"workbench {' '.join(args)} ended in a traceback:\n{shown}")
        return Result(r.exit_code, r.stdout, r.stderr)

    return run


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["pipeline", "save", "{tmp}/missing.yaml"], "{tmp}/missing.yaml: cannot read it (no such file)"),
        (["pipeline", "save", "{tmp}"], "{tmp}: cannot read it (a folder, not a pipeline file)"),
        (["pipeline", "check", "{tmp}/missing.yaml"], "{tmp}/missing.yaml: cannot read it (no such file)"),
        (["pipeline", "show", "{tmp}/missing.yaml"], "{tmp}/missing.yaml: cannot read it (no such file)"),
    ],
)
def test_a_missing_file_or_a_folder_is_one_line(tmp_path, workbench, args, line):
    r = workbench([a.format(tmp=tmp_path) for a in args])
    assert r.returncode == 1, r.stderr
    out = (r.stdout + r.stderr).strip()
    assert "Traceback" not in out, out
    assert out == line.format(tmp=tmp_path)


def test_a_bad_stage_is_refused_before_the_version_is_stored(workbench):
    r = workbench(["pipeline", "save", "pipelines/demo_intents.yaml", "--stage", "prod"])
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == "--stage 'prod': expected one of production, staging"
    versions = workbench(["pipeline", "versions", "demo_intents"])
    assert versions.returncode == 1 and "no stored versions" in versions.stderr, versions.stderr


def test_names_and_files_still_resolve(workbench):
    by_file = workbench(["pipeline", "check", "pipelines/demo_intents.yaml"])
    assert by_file.returncode == 0, by_file.stdout + by_file.stderr
    by_name = workbench(["pipeline", "check", "demo_intents"])
    assert by_name.returncode == 0, by_name.stdout + by_name.stderr
