"""`workbench kb check` on malformed rule files: a located error, exit 1, never a traceback.

Each file's first line says where the error is and what it says (`; expect: LINE:COL text`);
its second line says whether real CLIPS (clipspy, the oracle) also rejects the file.
"""

from __future__ import annotations

import re
from pathlib import Path

import clips
import pytest
from typer.testing import CliRunner

from cli.app import app

MALFORMED = sorted((Path(__file__).parent / "malformed").glob("*.clp"))
runner = CliRunner()


def _expectation(path: Path) -> tuple[int, int, str, str]:
    first, second = path.read_text().splitlines()[:2]
    m = re.match(r"; expect: (\d+):(\d+) (.+)", first)
    assert m, f"{path.name}: first line must be '; expect: LINE:COL text'"
    return int(m[1]), int(m[2]), m[3].strip(), second.split(":", 1)[1].strip()


def test_at_least_thirty_malformed_files() -> None:
    assert len(MALFORMED) >= 30


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: p.stem)
def test_check_gives_located_error(path: Path) -> None:
    line, col, text, _ = _expectation(path)
    result = runner.invoke(app, ["kb", "check", str(path)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    expected_prefix = f"{path}:{line}:{col}: "
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    assert lines and all(re.match(r".+:\d+:\d+: .+", ln) for ln in lines), result.stdout
    assert any(ln.startswith(expected_prefix) and text in ln for ln in lines), (expected_prefix, text, result.stdout)


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: p.stem)
def test_clips_agrees(path: Path) -> None:
    """Where we say CLIPS rejects the file, real CLIPS rejects it too (the rest are our stricter checks)."""
    *_, claim = _expectation(path)
    env = clips.Environment()
    try:
        env.load(str(path))
        verdict = "accepts"
    except clips.CLIPSError:
        verdict = "rejects"
    assert verdict == claim
