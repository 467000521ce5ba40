"""Rendering of a `DemoReport`: the summary table, model-alone vs model+rules, explained examples."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.table import Table

from .runner import DemoReport
from .summary import PipelineSummary

# A decimal number written with 5+ digits after the point (CLIPS's str-cat of a float: 0.130966699857469).
_LONG_NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d{5,}(?:e[-+]?\d+)?(?![\w.])")


def short_numbers(text: str) -> str:
    """`text` with each long decimal number rounded for display: 3 significant digits below 1
    (0.000228942991953923 -> 0.000229), 3 decimals from 1 up. The recorded reasons keep every digit;
    only the demo's printout rounds (the margin 0.00121971964836121 reads 0.00122)."""

    def short(m: re.Match[str]) -> str:
        x = float(m.group())
        return f"{x:.3g}" if abs(x) < 1 else f"{x:.3f}"

    return _LONG_NUMBER.sub(short, text)


def _fmt_ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _fmt_metric(v: Any) -> str:
    if isinstance(v, dict) and "value" in v:
        if v["value"] is None:
            return f"- (0 of {v['of']})"
        return f"{100 * v['value']:.1f}% ({v['count']}/{v['of']})"
    if isinstance(v, dict):
        return ", ".join(f"{k} {n}" for k, n in v.items()) or "-"
    return "-" if v is None else str(v)


def summary_table(report: DemoReport) -> Table:
    """One row per pipeline: inputs, outcomes, headline accuracy, latency, batches, firings, model calls."""
    t = Table(title="workbench demo", title_justify="left", show_lines=False)
    for col, just in (
        ("pipeline", "left"),
        ("inputs", "right"),
        ("outcomes", "left"),
        ("accuracy: model -> model+rules", "left"),
        ("p50 ms", "right"),
        ("p99 ms", "right"),
        ("batch sizes", "left"),
        ("rule firings", "right"),
        ("model calls (skipped by gates)", "right"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for s in report.summaries:
        if s.unavailable:
            t.add_row(s.name, "-", f"[red]unavailable: {s.unavailable}[/red]", "-", "-", "-", "-", "-", "-")
            continue
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(s.outcomes.items(), key=lambda kv: -kv[1]))
        if s.failed:
            outcomes += f", [red]failed {s.failed}[/red]"
        t.add_row(
            s.name,
            str(s.inputs),
            outcomes,
            headline(s),
            _fmt_ms(s.p50_ms),
            _fmt_ms(s.p99_ms),
            s.batch_text(),
            str(s.rule_firings),
            f"{s.model_calls} ({s.model_calls_skipped})",
        )
    return t


def headline(s: PipelineSummary) -> str:
    """The pipeline's model-alone -> model+rules figure (or its rail outcome for generation)."""
    m = s.metrics

    def pct(key: str) -> str:
        v = m.get(key)
        return "-" if not isinstance(v, dict) or v.get("value") is None else f"{100 * v['value']:.1f}%"

    if s.name == "demo_digits":
        return (
            f"IDs {pct('model alone: ID numbers read right')} -> {pct('model + rules: auto-decided ID numbers right')} "
            f"(review {pct('share sent to review')})"
        )
    if s.name == "demo_intents":
        return (
            f"intent {pct('model alone: intent accuracy')} -> {pct('model + rules: intent accuracy')} "
            f"(action {pct('model + rules: action as labelled')})"
        )
    return f"input rail {pct('input rail blocked the prompts it must block')}; TTFT p50 {m.get('TTFT p50 ms')} ms"


def print_report(report: DemoReport, console: Console | None = None, examples: int = 4) -> None:
    """Print the summary table, then per pipeline its metrics and a few explained examples."""
    console = console or Console()
    console.print()
    console.print(summary_table(report))
    for s in report.summaries:
        if s.unavailable:
            console.print(f"\n[bold]{s.name}[/bold]: [red]not run -- {s.unavailable}[/red]")
            continue
        console.print(f"\n[bold]{s.name}[/bold] -- {s.title} ({s.seconds:.1f} s, {s.runs_recorded} runs recorded)")
        mt = Table(show_header=False, box=None, padding=(0, 2))
        for k, v in s.metrics.items():
            mt.add_row(k, _fmt_metric(v))
        console.print(mt)
        for e in s.examples[:examples]:
            console.print(f"  [cyan]{e['kind']}[/cyan]: {e['title']}", highlight=False)
            for line in e["lines"]:
                console.print(f"      {short_numbers(line)}", highlight=False, markup=False)
            if e.get("run_id"):
                console.print(f"      [dim]run {e['run_id']} -- workbench runs show {e['run_id'][:8]}[/dim]")
        for err in s.errors[:5]:
            console.print(f"  [red]error[/red] {err}", highlight=False)
    recorded = sum(s.runs_recorded for s in report.summaries)
    load = "" if report.load_average is None else f", load average {report.load_average[0]} -> {report.load_average[1]}"
    console.print(f"\n{recorded} runs recorded in {report.store_url} (workbench runs list)")
    console.print(
        f"model loading {report.setup_s:.1f} s, total {report.total_s:.1f} s wall, {report.cpu_s:.1f} s CPU{load}"
    )
