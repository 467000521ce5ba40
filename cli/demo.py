"""`workbench demo`: the main job -- three demo pipelines on real held-out data, summary table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from .outputs import FILE_HELP, FOLDER_HELP, check_output_file, check_output_folder

app = typer.Typer(
    help="Run the demo pipelines (digits, intents, generation) on real held-out data and print a summary.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@app.callback(invoke_without_command=True)
def demo(
    only: list[str] | None = typer.Option(
        None, "--only", help="Run only these parts: digits, intents, generate (repeatable)."
    ),
    quick: bool = typer.Option(False, "--quick", help="A few inputs per pipeline instead of the whole held-out sets."),
    concurrency: int = typer.Option(
        32, "--concurrency", min=1, help="Runs in flight per pipeline (model calls batch together)."
    ),
    stream: bool = typer.Option(
        False, "--stream", help="Print the first generation's text as it streams through the rails."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help=f"Also write the report as JSON to this file. {FILE_HELP}"
    ),
    examples: int = typer.Option(4, "--examples", min=0, help="Explained examples shown per pipeline."),
    write_inputs: Path | None = typer.Option(
        None,
        "--write-inputs",
        help="Write the held-out inputs as JSONL files "
        f"(for `workbench run PIPELINE --input-file`, the API, the TUI) into this folder and exit. {FOLDER_HELP}",
    ),
) -> None:
    """Run the demo pipelines through the Workbench (every run recorded in the store), then print
    per pipeline: inputs, outcomes, model-alone vs model+rules accuracy, latency p50/p99, batch
    sizes, rule firings and model calls skipped by gates, with a few explained examples.
    Exit code 1 when a part is unavailable or a run failed."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from cli.benchmarks.report import report_console
    from workbench.demo import PARTS, DemoOptions, print_report, run_demo_sync

    console = report_console()
    if write_inputs is not None:
        from workbench.demo.inputs import write_demo_inputs

        check_output_folder("--write-inputs", write_inputs)

        try:
            written = write_demo_inputs(write_inputs)
        except OSError as exc:
            typer.echo(f"error: --write-inputs {write_inputs}: {exc.strerror or exc}", err=True)
            raise typer.Exit(1) from None
        for path, n in written.items():
            console.print(f"{n} inputs -> {path}")
        return
    check_output_file("--json", json_out, "JSON file")  # before minutes of runs, not after
    try:
        options = DemoOptions(parts=tuple(only) if only else PARTS, quick=quick, concurrency=concurrency, stream=stream)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    report = run_demo_sync(options, console=console)
    print_report(report, console, examples)
    if json_out is not None:
        try:
            json_out.write_text(json.dumps(report.to_dict(), indent=2, default=str) + "\n")
        except OSError as exc:
            typer.echo(f"error: --json {json_out}: cannot write it ({exc.strerror or exc})", err=True)
            raise typer.Exit(1) from None
        console.print(f"report written to {json_out}")
    if not report.ok:
        raise typer.Exit(1)
