"""`workbench run PIPELINE --input-file F.jsonl --ray ADDRESS`: a batch run through Ray Data.

The same JSONL lines as the local run (one per input; the order of lines may differ), a progress bar on
stderr, the runs recorded in the store of WORKBENCH_DATABASE_URL as a local batch records them (with
`served_by`). docs/scaling.md.
"""

from __future__ import annotations

import json
import sys

import typer


def run_on_ray(
    address: str, pipeline: str, items: list[dict], where: list[str], version: str | None, explain: bool
) -> int:
    """Run the batch on Ray; returns the exit status (0: every run succeeded, 1: any failed, 2: cannot start)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from workbench.scale import ScaleError

    err = Console(stderr=True)
    try:
        from workbench.scale import connect, run_dataset

        cluster = connect(address)
    except ScaleError as exc:
        typer.echo(f"workbench run --ray: {exc}", err=True)
        return 2
    failed = 0
    try:
        with Progress(
            TextColumn(f"[bold]{pipeline} (Ray)"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
        ) as prog:
            task = prog.add_task("runs", total=len(items))

            def emit(i: int, line: dict) -> None:
                nonlocal failed
                if "error_type" in line:
                    line = {"input": where[i], **line}
                failed += 0 if line.get("status") == "succeeded" else 1
                sys.stdout.write(json.dumps(line, default=str) + "\n")
                sys.stdout.flush()
                prog.advance(task)

            run_dataset(pipeline, items, cluster=cluster, version=version, explain=explain, on_result=emit)
    finally:
        cluster.shutdown()
    err.print(f"{len(items) - failed} succeeded, {failed} failed")
    return 1 if failed else 0
