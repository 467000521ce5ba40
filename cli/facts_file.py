"""Reading a facts file for the `workbench kb` commands (`--facts FILE.json`, `-` for stdin)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def fail(message: str) -> None:
    """Print `error: message` on stderr and exit 1 (SystemExit: no typer import, which the fast `kb ask`
    path avoids for start-up; typer's commands end the same way with it)."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(1)


def read_facts_file(path: Path | None) -> list:
    """The facts of a JSON file: a list of facts (`rules.Fact.from_dict` shapes) or `{"facts": [...]}`;
    `-` reads stdin, None gives no facts. Exits 1 with a located message (`FILE:LINE:COL`, not UTF-8
    text, `FILE: facts[2].slots.age: ...`) for a file that cannot be used."""
    import rules

    if path is None:
        return []
    where = "stdin" if str(path) == "-" else str(path)
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        fail(f"cannot read facts file {where}: {exc.strerror}")
    except UnicodeDecodeError as exc:
        fail(f"{where}: not UTF-8 text (byte {exc.start}: {exc.reason})")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"{where}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}")
    if isinstance(data, dict) and set(data) == {"facts"}:
        data = data["facts"]
    try:
        return rules.facts_from_json(data, "facts")
    except rules.FactError as exc:
        fail(f"{where}: {exc}")
    return []
