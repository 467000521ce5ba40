"""`workbench demo`: the three demo pipelines on real held-out data, with progress and a summary.

    from workbench.demo import DemoOptions, run_demo_sync
    report = run_demo_sync(DemoOptions(parts=("digits", "intents", "generate")))
    report.summaries[0].metrics, report.to_dict()

Every run goes through the `Workbench` facade and is recorded in the run store.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from .summary import PipelineSummary

PARTS = ("digits", "intents", "generate")
MODELS = {"digits": ["demo-digits"], "intents": ["all-MiniLM-L6-v2", "demo-intent-router"], "generate": ["demo-lm"]}


@dataclass(slots=True)
class DemoOptions:
    """What `workbench demo` runs.

    Attributes:
        parts: any of "digits", "intents", "generate", in the order run.
        quick: a few inputs per pipeline (tests, smoke checks) instead of the whole held-out sets.
        concurrency: runs in flight per pipeline (their model calls batch together).
        stream: print one generation's text as it streams through the rails.
    """

    parts: tuple[str, ...] = PARTS
    quick: bool = False
    concurrency: int = 32
    stream: bool = False

    def __post_init__(self) -> None:
        self.parts = tuple(self.parts)
        unknown = [p for p in self.parts if p not in PARTS]
        if unknown or not self.parts:
            raise ValueError(f"demo parts {list(unknown) or '[]'}: expected one or more of {', '.join(PARTS)}")
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ValueError(f"DemoOptions.concurrency must be an int >= 1, got {self.concurrency!r}")


@dataclass(slots=True)
class DemoReport:
    """The demo's results: one `PipelineSummary` per part; `setup_s`: the longest model load
    (models load in the background while earlier parts run); `total_s`: wall time; `cpu_s`: CPU
    time of this process (all threads), seconds; `load_average`: the machine's 1-minute load
    average at the start and the end (how shared the CPU was)."""

    summaries: list[PipelineSummary] = field(default_factory=list)
    setup_s: float = 0.0
    total_s: float = 0.0
    cpu_s: float = 0.0
    load_average: tuple[float, float] | None = None
    store_url: str = ""

    @property
    def ok(self) -> bool:
        """True when every part ran and no run failed."""
        return all(s.unavailable is None and s.failed == 0 for s in self.summaries)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "setup_s": round(self.setup_s, 3),
            "total_s": round(self.total_s, 3),
            "cpu_s": round(self.cpu_s, 3),
            "load_average": self.load_average,
            "store": self.store_url,
            "pipelines": [s.to_dict() for s in self.summaries],
        }


async def run_demo(wb: Any, options: DemoOptions, console: Console | None = None) -> DemoReport:
    """Run the chosen parts on `wb` (a `workbench.Workbench`) with a rich progress display."""
    from .digits_demo import run_digits
    from .generate_demo import run_generate
    from .intents_demo import run_intents

    console = console or Console()
    report = DemoReport(store_url=wb.store.url)
    t0, cpu0, load0 = time.perf_counter(), time.process_time(), _load_average()
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        # Models load in worker threads while earlier parts run; each part waits for its own.
        loads: dict[str, asyncio.Task] = {}
        for part in options.parts:
            if MODELS[part]:
                task = progress.add_task(f"loading {', '.join(MODELS[part])}", total=len(MODELS[part]))
                loads[part] = asyncio.create_task(_load(wb, MODELS[part], progress, task, console))
        for part in options.parts:
            if part in loads:
                report.setup_s = max(report.setup_s, await loads[part])
            task = progress.add_task(f"pipeline {_name(part)}", total=None)

            def bar(done: int, total: int, task=task) -> None:
                progress.update(task, completed=done, total=total)

            try:
                if part == "digits":
                    s = await run_digits(wb, quick=options.quick, concurrency=options.concurrency, progress=bar)
                elif part == "intents":
                    s = await run_intents(wb, quick=options.quick, concurrency=options.concurrency, progress=bar)
                else:
                    s = await run_generate(
                        wb, quick=options.quick, progress=bar, on_text=_streamer(console) if options.stream else None
                    )
            except Exception as exc:  # one part failing must not hide the others' results
                s = PipelineSummary(_name(part), unavailable=f"failed: {type(exc).__name__}: {exc}")
            if s.unavailable:
                progress.update(task, description=f"pipeline {s.name}: [red]unavailable[/red]", total=1, completed=0)
            report.summaries.append(s)
    report.total_s = time.perf_counter() - t0
    report.cpu_s = time.process_time() - cpu0
    load1 = _load_average()
    report.load_average = (load0, load1) if load0 is not None and load1 is not None else None
    return report


def _load_average() -> float | None:
    """The 1-minute load average (None where the platform has none)."""
    import os

    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


async def _load(wb: Any, names: list[str], progress: Progress, task: Any, console: Console) -> float:
    """Load models in a worker thread; returns seconds since the demo started when done."""
    t0 = time.perf_counter()
    for m in names:
        try:
            await asyncio.to_thread(wb.get_model, m)
        except Exception as exc:  # the part that needs it fails with the reason below
            console.print(f"[red]model {m} could not be loaded: {exc}[/red]")
        progress.advance(task)
    return time.perf_counter() - t0


def _name(part: str) -> str:
    return {"digits": "demo_digits", "intents": "demo_intents", "generate": "demo_generate"}[part]


def _streamer(console: Console):
    """Print the streamed generation line by line as the rails release it."""
    buf = {"text": ""}

    def on_text(index: int, chunk: str) -> None:
        buf["text"] += chunk
        while "\n" in buf["text"]:
            line, buf["text"] = buf["text"].split("\n", 1)
            if line.strip():
                console.print(Text.assemble(("stream> ", "dim"), line), highlight=False)

    return on_text


def run_demo_sync(
    options: DemoOptions | None = None, *, console: Console | None = None, workbench: Any = None
) -> DemoReport:
    """`run_demo` for scripts: opens a `Workbench` from the settings unless one is given."""
    options = options or DemoOptions()
    if workbench is not None:
        return asyncio.run(run_demo(workbench, options, console))
    from workbench import Workbench

    with Workbench.open() as wb:
        return asyncio.run(run_demo(wb, options, console))
