"""What one demo pipeline did over its inputs: counts, accuracies, latencies, batches, firings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def percentile_ms(seconds: list[float], q: float) -> float | None:
    """The q-th percentile (0..100) of durations given in seconds, in milliseconds (None if empty)."""
    return None if not seconds else float(np.percentile(np.asarray(seconds) * 1000.0, q))


def ratio(a: int, b: int) -> dict[str, Any]:
    """A metric `a` out of `b`: `{"value": a / b (None when b is 0), "count": a, "of": b}`."""
    return {"value": (a / b) if b else None, "count": a, "of": b}


@dataclass(slots=True)
class PipelineSummary:
    """One pipeline's demo results.

    Attributes:
        name: pipeline name; `title`: what it shows.
        inputs: inputs run; `failed`: runs that failed (error or exception).
        outcomes: outcome -> count (accept/corrected/review/rejected; answer/escalate/...).
        metrics: named ratios in [0, 1] or numbers (e.g. "model alone: sequence accuracy").
        latencies_s: end-to-end run durations, seconds.
        batch_sizes: batch size -> model calls that ran in a batch of that size.
        rule_firings: total rule firings over all runs.
        model_calls / model_calls_skipped: model calls made, and calls gates kept from running.
        runs_recorded: runs written to the store.
        examples: explained examples, `{"title", "lines": [str]}`.
        unavailable: why the pipeline could not run (None when it ran).
        seconds: wall time of the whole pipeline's part of the demo.
    """

    name: str
    title: str = ""
    inputs: int = 0
    failed: int = 0
    outcomes: Counter = field(default_factory=Counter)
    metrics: dict[str, Any] = field(default_factory=dict)
    latencies_s: list[float] = field(default_factory=list)
    batch_sizes: Counter = field(default_factory=Counter)
    rule_firings: int = 0
    model_calls: int = 0
    model_calls_skipped: int = 0
    runs_recorded: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    unavailable: str | None = None
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def tally(self, label: str, r: Any, model_nodes: tuple[str, ...], run_ids: list[str]) -> dict[str, Any] | None:
        """Count one run result (or the exception in its place): failures with `label`, recorded
        runs, latency, gate-skipped model calls and the outcome (`outputs["action"]`).

        Returns the run's outputs, or None for a failed run.
        """
        if isinstance(r, BaseException) or not r.ok:
            self.failed += 1
            self.errors.append(f"{label}: {r if isinstance(r, BaseException) else r.error}")
            return None
        self.runs_recorded += r.run_id is not None
        self.latencies_s.append(r.duration_s)
        self.model_calls_skipped += sum(1 for n in model_nodes if n in r.skipped)
        if r.run_id:
            run_ids.append(r.run_id)
        out = r.outputs or {}
        self.outcomes[str(out.get("action"))] += 1
        return out

    @property
    def p50_ms(self) -> float | None:
        return percentile_ms(self.latencies_s, 50)

    @property
    def p99_ms(self) -> float | None:
        return percentile_ms(self.latencies_s, 99)

    def batch_text(self) -> str:
        """`"1-9 (mean 4.2)"`: the range and the call-weighted mean of batch sizes seen."""
        if not self.batch_sizes:
            return "-"
        sizes = list(self.batch_sizes.elements())
        return f"{min(sizes)}-{max(sizes)} (mean {np.mean(sizes):.1f})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "pipeline": self.name,
            "title": self.title,
            "inputs": self.inputs,
            "failed": self.failed,
            "outcomes": dict(self.outcomes),
            "metrics": self.metrics,
            "latency_p50_ms": self.p50_ms,
            "latency_p99_ms": self.p99_ms,
            "batch_sizes": {str(k): v for k, v in sorted(self.batch_sizes.items())},
            "rule_firings": self.rule_firings,
            "model_calls": self.model_calls,
            "model_calls_skipped_by_gates": self.model_calls_skipped,
            "runs_recorded": self.runs_recorded,
            "examples": self.examples,
            "unavailable": self.unavailable,
            "seconds": round(self.seconds, 3),
            "errors": self.errors,
        }

    def explain_examples(self, wb: Any) -> None:
        """Add to each example the rules that fired in its run, in order, per node (from its trace)."""
        for e in self.examples:
            if e.get("run_id"):
                e["lines"].append("rules fired: " + rule_chain(wb.get_trace(e["run_id"])))

    def add_traces(self, store: Any, run_ids: list[str]) -> None:
        """Count the rule firings, model calls and batch sizes recorded in the traces of `run_ids`
        (read from the run store in one query per 500 runs)."""
        from sqlalchemy import func, select

        from workbench.store import TraceEventRow

        with store.session() as session:
            for start in range(0, len(run_ids), 500):
                ids = run_ids[start : start + 500]
                where = TraceEventRow.run_id.in_(ids)
                self.rule_firings += (
                    session.scalar(select(func.count()).where(where, TraceEventRow.kind == "rule_firing")) or 0
                )
                for (payload,) in session.execute(
                    select(TraceEventRow.payload).where(where, TraceEventRow.kind == "model_call")
                ):
                    self.model_calls += 1
                    size = (payload or {}).get("batch_size")
                    if size:
                        self.batch_sizes[int(size)] += 1


def rule_chain(trace: list[dict[str, Any]]) -> str:
    """`"quality: classify-well-formed | checksum: start-reading, read-next-digit x8, ..."`: the rule
    firings of a run's trace in order, grouped by node, repeats counted."""
    groups: list[tuple[str, list[list[Any]]]] = []
    for ev in trace:
        if ev["kind"] != "rule_firing":
            continue
        node, rule = ev.get("node") or "?", ev["payload"].get("rule", "?")
        if not groups or groups[-1][0] != node:
            groups.append((node, []))
        runs = groups[-1][1]
        if runs and runs[-1][0] == rule:
            runs[-1][1] += 1
        else:
            runs.append([rule, 1])
    return (
        " | ".join(f"{node}: " + ", ".join(r if n == 1 else f"{r} x{n}" for r, n in runs) for node, runs in groups)
        or "none"
    )
