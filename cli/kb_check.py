"""`workbench kb check FILE...`: located errors (exit 1) or a summary of templates and rules (exit 0)."""

from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import Annotated

import typer

from rules import RuleError, load_knowledge_base


def allow_unsafe_setting(flag: bool) -> bool:
    """`--allow-unsafe`, else the setting `allow_unsafe_rules` (WORKBENCH_ALLOW_UNSAFE_RULES); exit 2 on bad settings."""
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
        raise typer.Exit(1)
    summary = kb.summary()
    from chaining.backward.check import unknown_premises

    unknown = unknown_premises(kb)  # premises over relations nothing defines (warnings; facts may come at run time)
    if as_json:
        typer.echo(jsonlib.dumps({"ok": True, **summary, "warnings": [u.to_dict() for u in unknown]}))
        return
    for u in unknown:
        typer.echo(f"{u.file}:{u.line}:{u.column}: warning: {u.message}", err=True)
    typer.echo(f"ok: {len(files)} file(s), knowledge base {kb.name} version {kb.version[:12]}")
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
