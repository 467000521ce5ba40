"""`workbench runs list|show RUN_ID [--json]|replay RUN_ID [--kb NAME=FILE] [--regenerate]`: recorded runs."""

from __future__ import annotations

import asyncio
import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    no_args_is_help=True, help="Recorded runs: list, show with provenance, replay with an edited knowledge base."
)
console = Console()


class RunStatus(StrEnum):
    succeeded = "succeeded"
    failed = "failed"


@app.command("list")
def list_(
    pipeline: Annotated[str | None, typer.Option("--pipeline", "-p", help="Only the runs of this pipeline.")] = None,
    status: Annotated[RunStatus | None, typer.Option("--status", help="Only the runs with this status.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many runs (1 or more).")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="The runs as a JSON list (summaries, as the API's).")] = False,
) -> None:
    """Recorded runs, newest first."""
    from workbench import Workbench

    with Workbench.open() as wb:
        runs = wb.list_runs(pipeline=pipeline, status=status.value if status else None, limit=limit)
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in runs], default=str, indent=2))
        return
    # fits 80 columns: no borders, narrow fixed columns, the version only where there is room, the
    # pipeline and outputs cut with an ellipsis (`runs show` has everything)
    from rich import box

    console = Console()  # made here: the terminal's (or COLUMNS's) width now, not at import
    wide = console.width >= 110
    t = Table(title="runs", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True)
    t.add_column("run", no_wrap=True, min_width=8)
    t.add_column("started", no_wrap=True, min_width=14)
    t.add_column("pipeline", no_wrap=True, overflow="ellipsis", max_width=14)
    if wide:
        t.add_column("version", no_wrap=True, min_width=8)
    t.add_column("status", no_wrap=True, min_width=9)
    t.add_column("ms", no_wrap=True, justify="right")
    fixed = 8 + 14 + 14 + (8 if wide else 0) + 9 + 6 + 2 * (6 if wide else 5)
    t.add_column("outputs / error", no_wrap=True, overflow="ellipsis", max_width=max(12, console.width - fixed))
    for r in runs:
        t.add_row(
            r.run_id[:8],
            r.started_at.strftime("%m-%d %H:%M:%S") if r.started_at else "-",
            r.pipeline,
            *([r.version[:8]] if wide else []),
            ("cached" if r.cache_hit and r.ok else r.status),
            f"{r.duration_s * 1000:.0f}",
            (json.dumps(r.outputs) if r.ok else r.error or "")[:300],
        )
    console.print(t)


@app.command(
    help="A run's provenance: versions, inputs, outputs, timings, trace (rule firings, model calls, gates) and "
    "explanation."
)
def show(
    run_id: Annotated[str, typer.Argument(help="Run id (a unique prefix of 4+ characters).")],
    as_json: Annotated[bool, typer.Option("--json", help="The run record with its trace as JSON.")] = False,
) -> None:
    """A run's provenance: versions, inputs, outputs, timings, trace (rule firings, model calls, gates) and
    explanation."""
    from workbench import Workbench
    from workbench.pipeline import NotFoundError
    from workbench.pipeline.render import explanation_tree

    with Workbench.open() as wb:
        try:
            r = wb.get_run(run_id)
            trace = wb.get_trace(r.run_id)
        except NotFoundError as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps({**r.to_dict(), "trace": trace}, default=str, indent=2))
        return
    console.print(
        f"[bold]run {r.run_id}[/] {r.status} {'(cache hit of ' + str(r.cached_from) + ')' if r.cache_hit else ''}"
    )
    console.print(f"pipeline {r.pipeline} @ {r.version}")
    if r.served_by:
        console.print(f"served by {r.served_by}", markup=False)
    for name, v in r.knowledge_base_versions.items():
        console.print(f"  knowledge base {name} @ {v[:12]}")
    for name, v in r.model_versions.items():
        console.print(f"  model {name} @ {v[:12]}")
    console.print("inputs:", _cut(json.dumps(r.inputs, default=str), 400), markup=False)
    console.print(
        "outputs:" if r.ok else "error:", json.dumps(r.outputs, default=str) if r.ok else r.error, markup=False
    )
    console.print("timings (ms):", ", ".join(f"{k} {v * 1000:.2f}" for k, v in r.timings.items()), markup=False)
    t = Table(title="trace")
    for c in ("#", "at ms", "kind", "node", "detail"):
        t.add_column(c)
    for e in trace:
        detail = _trace_detail(e["kind"], e["payload"])
        t.add_row(str(e["seq"]), f"{1000 * (e['at'] or 0):.2f}", e["kind"], e["node"] or "-", detail)
    console.print(t)
    if r.explanation:
        console.print(explanation_tree(r.explanation))


@app.command()
def replay(
    run_id: str,
    kb: Annotated[
        list[str] | None, typer.Option("--kb", help="NAME=FILE: use this rule file for knowledge base NAME.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The original, the replay and the changes as JSON.")] = False,
    record: Annotated[
        bool, typer.Option("--record/--no-record", help="Record the replay as a run (replay_of the original).")
    ] = True,
    regenerate: Annotated[
        bool,
        typer.Option(
            "--regenerate",
            help="Generate nodes decode again with the recorded seed (default: re-check the recorded text).",
        ),
    ] = False,
) -> None:
    """Re-run a recorded run on its pipeline version, optionally with edited knowledge bases; prints what changed."""
    from workbench import Workbench
    from workbench.pipeline import KnowledgeBaseError, NotFoundError

    edits: dict[str, str] = {}
    for item in kb or []:
        name, sep, file = item.partition("=")
        if not sep or not name or not Path(file).is_file():
            typer.echo(f"--kb {item!r}: expected NAME=FILE with an existing file", err=True)
            raise typer.Exit(2)
        edits[name] = file
    with Workbench.open() as wb:
        try:
            _load_models(wb, run_id)
            res = asyncio.run(wb.replay(run_id, knowledge_bases=edits, record=record, regenerate=regenerate))
        except (NotFoundError, KnowledgeBaseError) as exc:
            typer.echo(str(exc), err=True)
            raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(res.to_dict(), default=str, indent=2))
        return
    as_run = f"as {res.replay.run_id}" if res.replay.run_id else "(not recorded)"
    console.print(f"replayed {res.original.run_id} {as_run}: {res.replay.status}")
    if not res.changes:
        console.print("no change")
        return
    ch = res.changes
    for k, v in ch.get("outputs", {}).items():
        console.print(f"  output {k}: {json.dumps(v['before'])} -> {json.dumps(v['after'])}", markup=False)
    if "status" in ch:
        console.print(
            f"  status: {ch['status']['before']} -> {ch['status']['after']} {ch['status'].get('error') or ''}",
            markup=False,
        )
    for node, v in ch.get("gates", {}).items():
        console.print(f"  gate {node}: {v['before']} -> {v['after']}", markup=False)
    for node, v in ch.get("rules", {}).items():
        console.print(f"  rules in {node}: fired {v['before']} -> {v['after']}", markup=False)
    for name, v in ch.get("knowledge_base_versions", {}).items():
        console.print(f"  knowledge base {name}: {str(v['before'])[:12]} -> {str(v['after'])[:12]}", markup=False)
    if "skipped" in ch:
        console.print(f"  skipped nodes: {ch['skipped']['before']} -> {ch['skipped']['after']}", markup=False)


def _load_models(wb, run_id: str) -> None:
    """Load the models of the recorded run's pipeline version before the replay, as `workbench run`
    does: loaded inside the replayed run, a model's load time (seconds) was recorded as its latency.
    Raises NotFoundError for an unknown run; a model or pipeline that cannot load is left to the
    replay, which reports the reason."""
    original = wb.get_run(run_id)
    try:
        p = wb.get_pipeline(original.pipeline, original.version)
    except Exception:  # noqa: BLE001 - the replay says why
        return
    names = sorted({n.get("model") for n in p.nodes.values() if n.type in ("model", "generate")} - {None})
    with Console(stderr=True).status(f"loading {', '.join(map(str, names))}") if names else _nothing():
        for name in names:
            try:
                wb.get_model(name)
            except Exception:  # noqa: BLE001 - the replay fails with the reason
                pass


def _nothing():
    import contextlib

    return contextlib.nullcontext()


def _trace_detail(kind: str, p: dict) -> str:
    """One line for a trace event's payload, by event kind."""
    if kind == "rule_firing":
        return f"{p.get('rule')} on f-{p.get('facts')} +{p.get('asserted')} -{p.get('retracted')}"
    if kind == "model_call":
        return (
            f"{p.get('model')}@{str(p.get('version'))[:12]} batch {p.get('batch_size')} "
            f"queue {1000 * (p.get('queue_s') or 0):.2f} ms compute {1000 * (p.get('compute_s') or 0):.2f} ms"
        )
    if kind == "gate_decision":
        return f"branches {p.get('branches')} edges {p.get('edges')}"
    if kind == "proof":
        verdict = "proved" if p.get("proved") else "not proved"
        return f"{p.get('goal')}: {verdict} ({len(p.get('answers', []))} answers)"
    return _cut(json.dumps(p, default=str), 100)


def _cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters; a longer one ends with how much was left out (`--json` has it all)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters: runs show --json)"
