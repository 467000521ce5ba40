"""Every rule file in the repository (each on its own): our checker accepts it exactly when real
CLIPS loads it. Unsafe functions are allowed here (CLIPS has no such check); the malformed
corpus has its own test."""

from __future__ import annotations

from pathlib import Path

import clips
import pytest

import rules

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for p in ROOT.rglob("*.clp")
               if ".venv" not in p.parts and "malformed" not in p.parts and "node_modules" not in p.parts)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_checker_agrees_with_clips(path: Path) -> None:
    env = clips.Environment()
    try:
        env.load(str(path))
        clips_ok = True
    except clips.CLIPSError:
        clips_ok = False
    diagnostics = rules.check_files([path], allow_unsafe=True)
    assert (not diagnostics) == clips_ok, [str(d) for d in diagnostics]
