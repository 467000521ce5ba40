"""Shared by the non-finite JSON regressions (q12, q13): the knowledge base and pipeline whose expressions
compute inf, -inf and nan, the outputs every surface must give for them, and a JSON reader that refuses the
bare NaN/Infinity tokens Python's `json` accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CASES = Path(__file__).resolve().parent / "cases" / "nonfinite_q12"
WANT = {"pos": "Infinity", "neg": "-Infinity", "nan": "NaN", "ok": 3.0, "all": ["Infinity", "-Infinity", "NaN"]}


def strict_json(text: str) -> Any:
    """`json.loads`, refusing NaN, Infinity and -Infinity tokens (not standard JSON)."""

    def refuse(name: str):
        raise ValueError(f"not standard JSON: {name}")

    return json.loads(text, parse_constant=refuse)
