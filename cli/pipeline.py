"""`workbench pipeline check|show|save|list|versions|promote`: pipeline files and stored versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

app = typer.Typer(no_args_is_help=True, help="Pipelines: check and draw YAML files, store versions, promote stages.")
console = Console()
err = Console(stderr=True)


def _wb():
    from workbench import Workbench

    return Workbench.open()


def _looks_like_a_path(ref: str) -> bool:
    """A reference that cannot be a pipeline name (names have no `/`, `\\` or `.`): a file path."""
    return any(c in ref for c in "/\\.") and "@" not in ref


def _unreadable(ref: str, exc: OSError) -> str:
    """`FILE: cannot read it (reason)` for a file reference that is missing, a folder or unreadable."""
    reason = "no such file" if isinstance(exc, FileNotFoundError) else exc.strerror or type(exc).__name__
    if isinstance(exc, IsADirectoryError) or Path(ref).is_dir():
        reason = "a folder, not a pipeline file"
    return f"{ref}: cannot read it ({reason})"


def _load(wb, ref: str):
    """A file path, or a pipeline name (resolved as `Workbench.get_pipeline`), optionally NAME@VERSION.

    Raises OSError for a reference that is a path (it has `/`, `\\` or `.`, which no name has) but
    not a readable file: it is not looked up as a name."""
    if Path(ref).is_file() or _looks_like_a_path(ref):
        return wb.load_pipeline_file(ref)
    name, _, version = ref.partition("@")
    return wb.get_pipeline(name, version or None)


@app.command()
def check(
    files: Annotated[list[str], typer.Argument(help="Pipeline YAML files (or stored names).")],
    load_models: Annotated[
        bool, typer.Option("--load-models", help="Load models to check inputs/outputs against signatures.")
    ] = False,
) -> None:
    """Validate pipelines; prints `file:line:col: node 'X', field 'Y': message` per problem (exit 1 if any)."""
    from workbench.pipeline import NotFoundError, PipelineValidationError

    bad = 0
    with _wb() as wb:
        for f in files:
            try:
                p = _load(wb, f)
                issues = wb.validate(p, load_models=load_models)
            except PipelineValidationError as exc:
                issues = exc.issues
            except NotFoundError as exc:
                typer.echo(f"{f}: {exc}")
                bad += 1
                continue
            except OSError as exc:
                typer.echo(_unreadable(f, exc))
                bad += 1
                continue
            for i in issues:
                typer.echo(str(i) if i.file else f"{f}: {i}")
            if issues:
                bad += 1
            else:
                err.print(f"{f}: ok — pipeline {p.name} @ {p.version[:12]}, {len(p.nodes)} nodes, {len(p.edges)} edges")
    raise typer.Exit(1 if bad else 0)


@app.command()
def show(
    ref: Annotated[str, typer.Argument(help="A pipeline file, NAME or NAME@VERSION.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the document as JSON instead of drawing it.")] = False,
) -> None:
    """Draw the pipeline graph in the terminal (layers and a tree from the inputs)."""
    from workbench.pipeline import NotFoundError, PipelineValidationError
    from workbench.pipeline.render import draw_pipeline

    with _wb() as wb:
        try:
            p = _load(wb, ref)
        except (PipelineValidationError, NotFoundError) as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(1) from None
        except OSError as exc:
            typer.echo(_unreadable(ref, exc), err=True)
            raise typer.Exit(1) from None
        if as_json:
            typer.echo(json.dumps(p.to_data(), indent=2))
            return
        try:
            drawing = draw_pipeline(p)
        except Exception:
            # A graph that cannot be laid out (a cycle, an edge to a node that does not exist) is
            # invalid: say where, as `pipeline check` does, instead of the layout's traceback.
            issues = wb.validate(p)
            if not issues:
                raise
            for i in issues:
                typer.echo(str(i) if i.file else f"{ref}: {i}", err=True)
            raise typer.Exit(1) from None
        console.print(drawing)


@app.command()
def save(
    file: Annotated[Path, typer.Argument(help="Pipeline YAML file to record as a version.")],
    stage: Annotated[
        str | None, typer.Option("--stage", help="Also point this stage (production|staging) at it.")
    ] = None,
) -> None:
    """Validate a pipeline file and store it as a version (content hash); prints the version."""
    from workbench.pipeline import PipelineValidationError
    from workbench.store.store import STAGES

    if stage is not None and stage not in STAGES:  # refused before anything is stored
        typer.echo(f"--stage {stage!r}: expected one of {', '.join(STAGES)}", err=True)
        raise typer.Exit(2)
    with _wb() as wb:
        try:
            p = wb.load_pipeline_file(file)
            version = wb.save_pipeline(p, stage=stage)
        except PipelineValidationError as exc:
            for i in exc.issues:
                typer.echo(str(i))
            raise typer.Exit(1) from None
        except OSError as exc:
            typer.echo(_unreadable(str(file), exc), err=True)
            raise typer.Exit(1) from None
        typer.echo(version)


@app.command("list")
def list_(
    as_json: Annotated[bool, typer.Option("--json", help="The pipelines as JSON (descriptions whole).")] = False,
) -> None:
    """Pipelines in the store and in the pipelines folder, with their stages."""
    with _wb() as wb:
        infos = wb.list_pipelines()
    if as_json:
        typer.echo(json.dumps([i.to_dict() for i in infos], indent=2))
        return
    # One line per pipeline: a description is cut to the width left (`--json` has it whole), the
    # file is shown relative to the current folder when it lies below it.
    rows = [
        (
            i.name,
            str(i.versions),
            (i.stages.get("production") or "-")[:12],
            (i.stages.get("staging") or "-")[:12],
            _shown_path(i.file) if i.file else "-",
            " ".join((i.description or "").split()),
        )
        for i in infos
    ]
    heads = ["name", "versions", "production", "staging", "file", "description"]
    widths = [max([len(h), *(len(r[k]) for r in rows)]) for k, h in enumerate(heads)]
    # Every pipeline on one line: the file, then the description, give way (`--json` has them whole);
    # where a long name leaves too little room the file column is left out.
    room = console.width - sum(widths[:4]) - 3 * 5  # padding and rule: three columns between cells
    if room < 2 * len("description"):
        heads.pop(4), widths.pop(4)
        rows = [r[:4] + r[5:] for r in rows]
        widths[4] = max(len(heads[4]), room + 3)
    else:
        widths[4] = min(widths[4], max(len(heads[4]), room // 2))
        widths[5] = max(len(heads[5]), room - widths[4])
    t = Table(title="pipelines", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for h, w in zip(heads, widths, strict=True):
        t.add_column(h, no_wrap=True, width=w)
    for r in rows:
        t.add_row(*(_cut(v, w, keep_end=h == "file") for h, v, w in zip(heads, r, widths, strict=True)))
    console.print(t)


def _cut(text: str, width: int, keep_end: bool = False) -> str:
    """`text` in at most `width` characters, "…" marking the cut (at the start for a path's tail)."""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if keep_end else text[: max(width - 1, 0)] + "…"


def _shown_path(file: str) -> str:
    """`file` relative to the current folder when it lies below it, else as given."""
    try:
        return str(Path(file).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return file


@app.command()
def versions(name: str, as_json: Annotated[bool, typer.Option("--json", help="The versions as JSON.")] = False) -> None:
    """Stored versions of a pipeline, oldest first, with their stage labels."""
    from workbench.pipeline import NotFoundError

    with _wb() as wb:
        try:
            rows = wb.pipeline_versions(name)
        except NotFoundError as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table(title=f"versions of {name}")
    for c in ("version", "created", "stages"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["version"], r["created_at"] or "-", ", ".join(r["stages"]))
    console.print(t)


@app.command()
def promote(
    name: str,
    version: Annotated[str, typer.Argument(help="A stored version (a unique prefix is enough).")],
    stage: Annotated[str, typer.Option("--stage", help="production or staging.")] = "production",
) -> None:
    """Point a stage label at a stored version (rollback = promote an earlier version)."""
    from workbench.pipeline import NotFoundError

    if not version.strip():  # an empty prefix matches every stored version: the only one would be promoted
        typer.echo(
            "VERSION is empty: give a stored version or a unique prefix of it (pipeline versions NAME)", err=True
        )
        raise typer.Exit(2)
    with _wb() as wb:
        try:
            full = wb.promote(name, version, stage)
        except (NotFoundError, ValueError) as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(1) from None
    typer.echo(f"{name} {stage} -> {full}")
