"""`workbench run PIPELINE (--input JSON | --input-file FILE.jsonl) [--explain] [--json]`."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    pipeline: Annotated[
        str, typer.Argument(help="Pipeline name (production version, else pipelines/NAME.yaml) or a YAML file.")
    ],
    input: Annotated[str | None, typer.Option("--input", "-i", help="One input as a JSON object.")] = None,
    input_file: Annotated[
        Path | None, typer.Option("--input-file", "-f", help="JSON Lines file: one input per line.")
    ] = None,
    version: Annotated[str | None, typer.Option("--version", help="Run this stored version (a unique prefix).")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Include the explanation.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole run record as JSON (one line per input for files).")
    ] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Runs in flight at once for --input-file (1 or more).")
    ] = 32,
    ray: Annotated[
        str | None,
        typer.Option("--ray", help="Run --input-file with Ray Data on a cluster: local, auto or ray://HOST:PORT."),
    ] = None,
) -> None:
    """Run a pipeline on one input or a JSON Lines file (rich progress bar; JSONL results on stdout).

    Exit status: 0 when every run succeeded, 1 when any failed or an input was invalid, 2 on bad usage.
    """
    if (input is None) == (input_file is None):
        typer.echo("give exactly one of --input JSON or --input-file FILE.jsonl", err=True)
        raise typer.Exit(2)
    if input is not None:
        try:
            items = [json.loads(input)]
        except json.JSONDecodeError as exc:
            typer.echo(f"--input: not valid JSON: {exc}", err=True)
            raise typer.Exit(2) from None
        where = ["--input"]
    else:
        items, where = _read_jsonl(input_file)
    bad = [i for i, x in enumerate(items) if not isinstance(x, dict)]
    if bad and (input is not None or ray is not None):  # a file run locally answers a bad line at its place
        first = items[bad[0]]
        got = (
            first.message
            if isinstance(first, InputLineError)
            else f"expected a JSON object, got {type(first).__name__}"
        )
        typer.echo(f"{where[bad[0]]}: {got}", err=True)
        raise typer.Exit(2)
    if ray is not None:
        if input_file is None:
            typer.echo("--ray runs a batch: give --input-file FILE.jsonl", err=True)
            raise typer.Exit(2)
        from .run_ray import run_on_ray

        raise typer.Exit(run_on_ray(ray, pipeline, items, where, version, explain))
    code = asyncio.run(_main(pipeline, items, where, version, explain, as_json, concurrency, single=input is not None))
    raise typer.Exit(code)


async def _load_models(wb, p, err: Console) -> None:
    """Load the models of the pipeline's model and generate nodes before the first run, as `serve`
    and `demo` do: loaded inside a run, a model's load time (seconds) was recorded as that run's
    latency. A model that cannot load is left to the runs, which record the reason."""
    names = sorted({n.get("model") for n in p.nodes.values() if n.type in ("model", "generate")} - {None})
    if not names:
        return
    with err.status(f"loading {', '.join(map(str, names))}"):
        for name in names:
            try:
                await asyncio.to_thread(wb.get_model, name)
            except Exception:  # noqa: BLE001 - the runs that need it fail with the reason
                pass


def _read_jsonl(path: Path) -> tuple[list, list[str]]:
    items, where = [], []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        typer.echo(f"{path}: cannot read: {exc.strerror}", err=True)
        raise typer.Exit(2) from None
    except UnicodeDecodeError as exc:
        typer.echo(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})", err=True)
        raise typer.Exit(2) from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:  # the line's answer, at its place (n16: it stopped the whole file)
            item = InputLineError(f"column {exc.colno}: not valid JSON: {exc.msg}")
        if not isinstance(item, (dict, InputLineError)):
            item = InputLineError(f"expected a JSON object, got {type(item).__name__}")
        items.append(item)
        where.append(f"{path}:{n}")
    return items, where


class InputLineError(ValueError):
    """A line of an --input-file that is no input (not JSON, not an object): answered at its place, the other
    lines run."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def _main(
    ref: str,
    items: list[dict],
    where: list[str],
    version: str | None,
    explain: bool,
    as_json: bool,
    concurrency: int,
    single: bool,
) -> int:
    from workbench import Workbench
    from workbench.pipeline import NotFoundError, PipelineValidationError
    from workbench.pipeline.render import explanation_tree

    out = Console()
    err = Console(stderr=True)
    wb = Workbench.open()
    try:
        try:
            p = wb.load_pipeline_file(ref) if Path(ref).is_file() else wb.get_pipeline(ref, version)
            wb.check(p)
        except (PipelineValidationError, NotFoundError) as exc:
            err.print(str(exc), markup=False)
            return 1
        await _load_models(wb, p, err)
        lines = items
        items = [x for x in lines if not isinstance(x, InputLineError)]
        if single:
            results = await wb.run_many(p, items, explain=explain)
        else:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(
                TextColumn(f"[bold]{p.name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
            ) as prog:
                task = prog.add_task("runs", total=len(items))
                results = await wb.run_many(
                    p, items, explain=explain, concurrency=concurrency, on_result=lambda i, r: prog.advance(task)
                )
        ran = iter(results)
        results = [x if isinstance(x, InputLineError) else next(ran) for x in lines]
        failed = 0
        for i, r in enumerate(results):
            if isinstance(r, BaseException):
                failed += 1
                line = {"input": where[i], "error": str(r), "error_type": type(r).__name__}
                if single:
                    err.print(f"{where[i]}: {r}", markup=False)
                else:
                    sys.stdout.write(json.dumps(line) + "\n")
                continue
            failed += 0 if r.ok else 1
            if as_json or not single:
                d = (
                    r.to_dict()
                    if as_json
                    else {
                        "run_id": r.run_id,
                        "status": r.status,
                        "outputs": r.outputs,
                        "error": r.error,
                        **({"explanation": r.explanation} if explain else {}),
                    }
                )
                sys.stdout.write(_json(d) + "\n")
            else:
                if r.ok:
                    out.print_json(_json(r.outputs))
                else:
                    err.print(f"run failed: {r.error}", markup=False)
                if explain and r.explanation:  # on stderr: stdout stays the outputs' JSON (`| jq` works)
                    err.print(explanation_tree(r.explanation))
                err.print(f"run {r.run_id} ({r.status}, {r.duration_s * 1000:.1f} ms)")
        if not single:
            err.print(f"{len(results) - failed} succeeded, {failed} failed")
        return 1 if failed else 0
    finally:
        wb.close()


def _json(value: object) -> str:
    """One JSON document as every other surface writes it: a float that is not finite as the string
    "NaN", "Infinity" or "-Infinity" (`rules.facts.NON_FINITE_JSON`), never a bare `NaN` token;
    values JSON has no type for as their `str`."""
    from rules.facts import finite_json

    return json.dumps(finite_json(value), default=str)
