"""Regression (n10, newcomer walk-through): docs/dependencies.md ("Dependencies and why each was
chosen", linked from the README) had no line for numpy, httpx, psycopg (the PostgreSQL store's
driver, extra `postgres`), ruff or import-linter, although the rules say every dependency gets one.
Every package that pyproject.toml declares (dependencies, optional extras, the dev group) is named."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    specs = list(project["project"]["dependencies"])
    for extra in project["project"].get("optional-dependencies", {}).values():
        specs += extra
    for group in project.get("dependency-groups", {}).values():
        specs += [s for s in group if isinstance(s, str)]
    return {re.split(r"[<>=!~\[; ]", s, maxsplit=1)[0].lower() for s in specs}


def test_every_declared_package_has_a_line():
    doc = (ROOT / "docs" / "dependencies.md").read_text().lower()
    named = {m.group(1) for m in re.finditer(r"(?<![\w.-])([a-z0-9][a-z0-9_.-]*)", doc)}
    missing = sorted(p for p in _declared() if p not in named and p.replace("-", "_") not in named)
    assert not missing, f"docs/dependencies.md names no reason for: {', '.join(missing)}"
