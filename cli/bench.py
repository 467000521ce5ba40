"""`workbench bench NAME [--out FILE.json]`: run one benchmark, print its table, optionally write JSON.

A benchmark is a module `cli.benchmarks.<NAME>` with `run(quick: bool = False) -> list[dict]`
and optionally `EXTRA: dict` filled during the run (written beside the rows).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Annotated

import typer

import cli.benchmarks as bench_pkg
from cli.benchmarks.report import print_rows, write_json

app = typer.Typer(no_args_is_help=True)


def available() -> list[str]:
    """Names of the benchmark modules present in `cli.benchmarks`."""
    return sorted(
        m.name for m in pkgutil.iter_modules(bench_pkg.__path__) if m.name != "report" and not m.name.startswith("_")
    )


def _make_command(name: str) -> None:
    def command(
        out: Annotated[Path | None, typer.Option("--out", help="Write the rows as JSON to this file.")] = None,
        quick: Annotated[bool, typer.Option("--quick", help="A short smoke run (not for reported numbers).")] = False,
    ) -> None:
        module = importlib.import_module(f"cli.benchmarks.{name}")
        rows = module.run(quick=quick)
        print_rows(name, rows)
        if out is not None:
            write_json(name, rows, out, getattr(module, "EXTRA", None))
            typer.echo(f"wrote {out}", err=True)

    command.__doc__ = f"Run the '{name}' benchmark (rows and goals: docs/benchmarks.md)."
    app.command(name)(command)


for _name in available():
    _make_command(_name)
