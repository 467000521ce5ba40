"""`workbench kb test FILE.yaml [--json]`: scenario tests for a knowledge base (chaining/scenarios.py).

Prints a pass/fail table; each failure shows what was expected and what was there (the facts of
that template, the rules that fired, the answers). Exit codes: 0 every scenario passed; 1 a
scenario failed or the knowledge base does not load; 2 the scenario file is malformed (also:
an expected pattern names a template or slot the knowledge base does not define, or a goal does
not parse).
"""

from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import Annotated

import typer


def test(
    file: Annotated[Path, typer.Argument(help="Scenario file (YAML): knowledge_base and scenarios.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the table.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", min=0.001, help="Time limit per scenario (s).")] = 60.0,
    allow_unsafe: Annotated[bool, typer.Option("--allow-unsafe", help="Permit functions that reach the OS.")] = False,
) -> None:
    """Run the scenarios of FILE against their knowledge base; exit 1 when any fails."""
    import rules
    from chaining.scenarios import ScenarioFile, ScenarioFileError, run_scenarios

    from .kb_check import allow_unsafe_setting

    def malformed(exc: ScenarioFileError) -> typer.Exit:
        if as_json:  # --json always answers with one JSON object
            typer.echo(jsonlib.dumps({"file": str(file), "error": str(exc), "scenarios": []}))
        typer.echo(f"error: {exc}", err=True)
        return typer.Exit(2)

    try:
        spec = ScenarioFile.read(file)
    except ScenarioFileError as exc:
        raise malformed(exc) from None
    try:
        results = run_scenarios(spec, allow_unsafe=allow_unsafe_setting(allow_unsafe), timeout=timeout)
    except ScenarioFileError as exc:  # a pattern or goal that does not fit the knowledge base
        raise malformed(exc) from None
    except rules.RuleError as exc:
        if as_json:
            doc = {"file": str(file), "error": "the knowledge base does not load", "scenarios": []}
            typer.echo(jsonlib.dumps({**doc, "diagnostics": [d.to_dict() for d in exc.diagnostics]}))
        for d in exc.diagnostics:
            typer.echo(str(d), err=True)
        typer.echo(f"error: {len(exc.diagnostics)} error(s) in the knowledge base", err=True)
        raise typer.Exit(1) from None
    failed = sum(not r.passed for r in results)
    if as_json:
        doc = {
            "file": str(file),
            "passed": len(results) - failed,
            "failed": failed,
            "scenarios": [r.to_dict() for r in results],
        }
        typer.echo(jsonlib.dumps(doc))
    else:
        _print_table(results)
        typer.echo(f"{len(results) - failed} passed, {failed} failed")
    raise typer.Exit(1 if failed else 0)


def _print_table(results) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_lines=False)
    table.add_column("scenario", overflow="fold")
    table.add_column("result")
    table.add_column("check")
    table.add_column("expected", overflow="fold")
    table.add_column("actual", overflow="fold")
    for r in results:
        if r.passed:
            table.add_row(r.name, "[green]pass[/green]", "", "", "")
        for i, f in enumerate(r.failures):
            table.add_row(r.name if i == 0 else "", "[red]FAIL[/red]" if i == 0 else "", f.check, f.expected, f.actual)
    Console(soft_wrap=False).print(table)


def register(app: typer.Typer) -> None:
    app.command("test")(test)
