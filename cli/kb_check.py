"""`workbench kb check FILE...`: located errors (exit 1) or a summary of templates and rules (exit 0).

What CLIPS reports but loads past (a deffunction that would replace a built-in, which CLIPS
skips; a redefined rule or template; an integer literal outside 64 bits) is printed as a
located warning and the file is accepted, as CLIPS accepts it; `--strict` refuses it.
Imports only the rule language (`rules`) and, for the unsafe-functions setting, the settings.
"""

from __future__ import annotations

import json as jsonlib
import os
from pathlib import Path
from typing import Annotated

import typer


def allow_unsafe_setting(flag: bool) -> bool:
    """`--allow-unsafe`, else the setting `allow_unsafe_rules` (WORKBENCH_ALLOW_UNSAFE_RULES).

    Exit 2 on bad settings."""
    if flag:
        return True
    if "WORKBENCH_ALLOW_UNSAFE_RULES" not in os.environ and "WORKBENCH_SETTINGS_FILE" not in os.environ:
        return False  # the setting's default: no source could change it, so skip loading the settings
    from workbench.config import ConfigError, get_settings

    try:
        return bool(get_settings().allow_unsafe_rules)
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
    from rules import RuleError, load_knowledge_base

    allow_unsafe = allow_unsafe_setting(allow_unsafe)
    try:
        kb = load_knowledge_base(files, allow_unsafe=allow_unsafe, strict=strict)
    except RuleError as exc:
        if as_json:
            typer.echo(jsonlib.dumps({"ok": False, "diagnostics": [d.to_dict() for d in exc.diagnostics]}))
        else:
            for d in exc.diagnostics:
                typer.echo(str(d))
            typer.echo(f"{len(exc.diagnostics)} error(s)", err=True)
        raise typer.Exit(1) from None
    summary = kb.summary()
    if as_json:
        typer.echo(jsonlib.dumps({"ok": True, **summary, "warnings": [d.to_dict() for d in kb.warnings]}))
        return
    for d in kb.warnings:
        typer.echo(str(d))
    typer.echo(
        f"ok: {len(files)} file(s), knowledge base {kb.name} version {kb.version[:12]}"
        + (f", {len(kb.warnings)} warning(s)" if kb.warnings else "")
    )
    for key in ("templates", "rules", "functions", "deffacts", "askable"):
        names = summary[key]
        if names or key in ("templates", "rules"):
            typer.echo(f"{key} ({len(names)}): {', '.join(names)}")
    for rule in kb.rules.values():
        typer.echo(
            f"  rule {rule.name}: salience {rule.salience if isinstance(rule.salience, int) else 'dynamic'}, "
            f"reads {sorted(rule.reads)}, writes {sorted(rule.writes)}"
        )


def register(app: typer.Typer) -> None:
    app.command("check")(check)
