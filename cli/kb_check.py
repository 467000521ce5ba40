"""`workbench kb check FILE...`: located errors (exit 1) or a summary of templates and rules (exit 0).

What CLIPS reports but loads past (a deffunction that would replace a built-in, which CLIPS
skips; a redefined rule or template; an integer literal outside 64 bits) is printed as a
located warning and the file is accepted, as CLIPS accepts it; `--strict` refuses it.
The plain command line skips typer altogether (`cli.kb_check_fast`, for start-up time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .kb_check_fast import SHOWN_NAMES, SHOWN_RULES, run_check, unsafe_setting

__all__ = ["SHOWN_NAMES", "SHOWN_RULES", "allow_unsafe_setting", "check", "register"]


def allow_unsafe_setting(flag: bool) -> bool:
    """`unsafe_setting` for typer commands: exit 2 with the message on bad settings."""
    from workbench.config import ConfigError

    try:
        return unsafe_setting(flag)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def check(
    files: Annotated[list[Path], typer.Argument(help="Rule files (.clp), loaded in order as one knowledge base.")],
    allow_unsafe: Annotated[bool, typer.Option("--allow-unsafe", help="Permit functions that reach the OS.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Refuse files with warnings too (what CLIPS reports but loads past).")
    ] = False,
) -> None:
    """Parse and validate rule files; print `file:line:col: message` for each problem."""
    code = run_check(files, allow_unsafe, as_json, strict)
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("check")(check)
