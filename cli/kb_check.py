"""`workbench kb check FILE...`: located errors (exit 1) or a summary of templates and rules (exit 0)."""

from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import Annotated

import typer

from rules import RuleError, load_knowledge_base

SHOWN_NAMES = 200  # names listed per line before '... N more' (--json lists all)
SHOWN_RULES = 100  # rules described one per line


def allow_unsafe_setting(flag: bool) -> bool:
    """`--allow-unsafe`, else the setting `allow_unsafe_rules` (WORKBENCH_ALLOW_UNSAFE_RULES); exit 2 on bad
    settings."""
    if flag:
        return True
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
) -> None:
    """Parse and validate rule files; print `file:line:col: message` for each problem."""
    allow_unsafe = allow_unsafe_setting(allow_unsafe)
    try:
        kb = load_knowledge_base(files, allow_unsafe=allow_unsafe)
    except RuleError as exc:
        if as_json:
            typer.echo(jsonlib.dumps({"ok": False, "diagnostics": [d.to_dict() for d in exc.diagnostics]}))
        else:
            for d in exc.diagnostics:
                typer.echo(str(d))
            typer.echo(f"{len(exc.diagnostics)} error(s)", err=True)
        raise typer.Exit(1) from None
    summary = kb.summary()
    from chaining.backward.check import unknown_premises

    unknown = unknown_premises(kb)  # premises over relations nothing defines (warnings; facts may come at run time)
    if as_json:
        typer.echo(jsonlib.dumps({"ok": True, **summary, "warnings": [u.to_dict() for u in unknown]}))
        return
    for u in unknown:
        typer.echo(f"{u.file}:{u.line}:{u.column}: warning: {u.message}", err=True)
    import shutil
    import textwrap

    width = max(40, min(shutil.get_terminal_size((100, 24)).columns, 200))
    typer.echo(f"ok: {len(files)} file(s), knowledge base {kb.name} version {kb.version[:12]}")
    for key in ("templates", "rules", "functions", "deffacts", "askable"):
        names = summary[key]
        if names or key in ("templates", "rules"):
            shown = (
                names if len(names) <= SHOWN_NAMES else [*names[:SHOWN_NAMES], f"... {len(names) - SHOWN_NAMES} more"]
            )
            text = f"{key} ({len(names)}): {', '.join(shown)}"
            typer.echo(textwrap.fill(text, width=width, subsequent_indent="  ", break_on_hyphens=False))
    rules_shown = list(kb.rules.values())[:SHOWN_RULES]
    for rule in rules_shown:
        typer.echo(
            f"  rule {rule.name}: salience {rule.salience if isinstance(rule.salience, int) else 'dynamic'}, "
            f"reads {sorted(rule.reads)}, writes {sorted(rule.writes)}"
        )
    if len(kb.rules) > SHOWN_RULES:
        typer.echo(f"  ... {len(kb.rules) - SHOWN_RULES} more rules (--json lists every one)")


def register(app: typer.Typer) -> None:
    app.command("check")(check)
