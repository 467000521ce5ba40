"""`workbench kb show FILE...`: the CLIPS text a knowledge base loads, decision tables as their rules.

Each file is printed under a `;;; FILE` line; a decision table (.csv/.xlsx) is printed as the
`defrule`s generated from its rows (each with a `; row N` comment). Exit 1 when the files do not
load (located errors on stderr).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def show(
    files: Annotated[list[Path], typer.Argument(help="Rule files (.clp) and decision tables (.csv, .xlsx).")],
    allow_unsafe: Annotated[bool, typer.Option("--allow-unsafe", help="Permit functions that reach the OS.")] = False,
) -> None:
    """Print the knowledge base's CLIPS text (decision tables as the rules generated from their rows)."""
    from .kb_ask import load_or_exit

    kb = load_or_exit(files, allow_unsafe)  # located errors on stderr, exit 1
    for filename, text in kb.sources:
        typer.echo(f";;; {filename}")
        typer.echo(text.rstrip("\n"))
        typer.echo("")


def register(app: typer.Typer) -> None:
    app.command("show")(show)
