"""`workbench bench NAME [--out FILE.json]`: run one benchmark, print its table, optionally write JSON.

`--out`'s folder must exist; it is checked before the benchmark runs (cli/outputs.py: no output option
creates missing folders).

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
from cli.outputs import FILE_HELP, check_output_file

app = typer.Typer(no_args_is_help=True)


def available() -> list[str]:
    """Names of the benchmark modules present in `cli.benchmarks`."""
    return sorted(
        m.name for m in pkgutil.iter_modules(bench_pkg.__path__) if m.name != "report" and not m.name.startswith("_")
    )


def _make_command(name: str) -> None:
    def command(
        out: Annotated[
            Path | None, typer.Option("--out", help=f"Write the rows as JSON to this file. {FILE_HELP}")
        ] = None,
        quick: Annotated[bool, typer.Option("--quick", help="A short smoke run (not for reported numbers).")] = False,
        ray: Annotated[
            str | None,
            typer.Option("--ray", help="Benchmarks with a Ray variant (api): run it on this cluster (local, auto...)."),
        ] = None,
        ray_store: Annotated[
            str | None,
            typer.Option(
                "--ray-store",
                help="With --ray: the replicas' run store (a database URL; default a temporary SQLite file with "
                "--ray local, else WORKBENCH_DATABASE_URL). The benchmark records its runs there.",
            ),
        ] = None,
    ) -> None:
        check_output_file("--out", out, "JSON file")  # before a run of minutes, not after it
        module = importlib.import_module(f"cli.benchmarks.{name}")
        if ray_store is not None and ray is None:
            raise typer.BadParameter("--ray-store needs --ray", param_hint="--ray-store")
        if ray is not None:
            rows = _run_on_ray(name, ray, quick, module, ray_store)
        else:
            rows = module.run(quick=quick)
        print_rows(name, rows)
        if out is not None:
            write_json(name, rows, out, getattr(module, "EXTRA", None))
            typer.echo(f"wrote {out}", err=True)

    command.__doc__ = f"Run the '{name}' benchmark (rows and goals: docs/benchmarks.md)."
    app.command(name)(command)


def _compare_command() -> None:
    """`workbench bench api_compare REV [REV ...]` (also `api-compare`): the one benchmark that takes arguments."""

    def command(
        revs: Annotated[
            list[str] | None,
            typer.Argument(
                help="Git revisions to compare, the first is the reference ('.' = this checkout as it is); "
                "none: HEAD~1 HEAD."
            ),
        ] = None,
        out: Annotated[
            Path | None, typer.Option("--out", help=f"Write the rows as JSON to this file. {FILE_HELP}")
        ] = None,
        quick: Annotated[bool, typer.Option("--quick", help="A short smoke run (not for reported numbers).")] = False,
        rounds: Annotated[int | None, typer.Option("--rounds", min=1, help="Rounds per concurrency level.")] = None,
        seconds: Annotated[
            float | None, typer.Option("--seconds", min=0.5, help="Seconds per server per round.")
        ] = None,
        concurrency: Annotated[
            str, typer.Option("--concurrency", help="Comma-separated concurrency levels, e.g. 1,64.")
        ] = "1,64",
    ) -> None:
        from cli.benchmarks import api_compare

        check_output_file("--out", out, "JSON file")
        try:
            levels = [int(x) for x in concurrency.split(",") if x.strip()]
        except ValueError:
            raise typer.BadParameter(f"--concurrency {concurrency!r}: integers separated by commas") from None
        if not levels or min(levels) < 1:
            raise typer.BadParameter(f"--concurrency {concurrency!r}: levels of 1 or more, separated by commas")
        try:
            rows = api_compare.run(
                quick=quick,
                revs=revs or list(api_compare.DEFAULT_REVS),
                concurrency=levels,
                rounds=rounds,
                seconds=seconds,
            )
        except api_compare.CompareError as exc:
            typer.echo(f"workbench bench api_compare: {exc}", err=True)
            raise typer.Exit(2) from None
        except api_compare.Interrupted as exc:  # servers, worktrees and the temporary folder are gone
            typer.echo(f"workbench bench api_compare: {exc}; servers and worktrees removed", err=True)
            raise typer.Exit(128 + exc.signum) from None
        print_rows("api_compare", rows)
        if out is not None:
            write_json("api_compare", rows, out, api_compare.EXTRA)
            typer.echo(f"wrote {out}", err=True)

    command.__doc__ = "A/B: the workbench server of several git revisions, interleaved rounds, CPU per request."
    app.command("api_compare")(command)
    app.command("api-compare", hidden=True)(command)


def _run_on_ray(name: str, address: str, quick: bool, module: object, store: str | None = None) -> list[dict]:
    """`cli.benchmarks._NAME_ray.run(address, quick, extra, store)`; exit 2 where there is none or Ray cannot start."""
    from workbench.scale import ScaleError

    try:
        ray_module = importlib.import_module(f"cli.benchmarks._{name}_ray")
    except ModuleNotFoundError:
        typer.echo(f"workbench bench {name}: no --ray variant (bench api has one)", err=True)
        raise typer.Exit(2) from None
    try:
        return ray_module.run(address, quick=quick, extra=getattr(module, "EXTRA", None), store=store)
    except ScaleError as exc:
        typer.echo(f"workbench bench {name} --ray: {exc}", err=True)
        raise typer.Exit(2) from None


for _name in available():
    if _name == "api_compare":
        _compare_command()
    else:
        _make_command(_name)
