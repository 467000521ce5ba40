"""The rooms import downwards only: the import-linter contracts of pyproject.toml hold.

Layers (docs: ../shared/ARCHITECTURE.md): cli > api | tui > workbench > chaining | neural > rules,
and neural imports nothing of ours. A failure lists the offending import chain.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_kept() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "lint-imports is not installed in this environment (dev group: import-linter)"
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_front_ends_reach_engines_only_through_workbench() -> None:
    """tui/ and api/ import no reasoner, model or rule-language module directly (contract
    `front-ends-through-workbench`); the explanation tree once imported `chaining.derivation`."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "lint-imports is not installed in this environment (dev group: import-linter)"
    proc = subprocess.run(
        [exe, "--no-cache", "--contract", "front-ends-through-workbench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "1 kept, 0 broken" in proc.stdout, proc.stdout[-4000:]
