"""Models screen: registered models, device, load/unload, live throughput/latency/batch-size sparklines."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Label, ProgressBar, Static

from ..metric_samples import empty_sample
from ..widgets.metric_spark import MetricSpark
from .base import WorkbenchScreen


class ModelsScreen(WorkbenchScreen):
    """Watch and manage the models the pipelines use."""

    MODE = "models"
    #: Focus goes here when the screen opens (before its first load marks it loading; see WorkbenchScreen.call).
    AUTO_FOCUS = "#models-table"
    HOME = "#models-table"
    TITLE = "Models"
    CSS_PATH = Path(__file__).with_name("models.tcss")
    HELP = """\
The table lists the models with kind, version (content hash of the weights), format, task,
device and state (READY once loaded — at start-up on a server). **l** loads and **u** unloads the
highlighted model (enter toggles). Below, live metrics sampled every second — in-process they are
this process's own; attached with `--url` they are the server's (its Prometheus `/metrics`):
throughput, mean request latency and mean batch size over each interval, as bars from zero with
the scale's top in the label, and KV-cache usage for generative models. **r** refreshes.
"""
    BINDINGS = [
        Binding("l", "load(True)", "Load"),
        Binding("u", "load(False)", "Unload"),
        Binding("enter", "toggle", "Load/unload", show=False),
        Binding("r", "refresh", "Refresh"),
    ]

    #: seconds between metric samples (tests set it high to keep snapshots still)
    poll_s: float = 1.0

    def __init__(self) -> None:
        super().__init__()
        self.models: list[dict] = []
        self.last: dict[str, tuple[float, dict]] = {}  # model -> (time, counters) of the previous sample
        self.current: str | None = None

    def body(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Models · metrics of {self.backend.metrics_scope}", id="models-title", classes="pane-title")
            yield DataTable(id="models-table", cursor_type="row", zebra_stripes=True)
            yield Static("no model highlighted", id="models-detail", classes="pane-title")
            yield MetricSpark("throughput", "req/s", id="spark-throughput")
            yield MetricSpark("latency (mean)", "ms", id="spark-latency")
            yield MetricSpark("batch size", "mean", id="spark-batch")
            with Vertical(id="models-kv"):
                yield Label("KV cache: - (not a generative model)", id="kv-label")
                yield ProgressBar(total=100, show_eta=False, id="kv-bar")

    def on_mount(self) -> None:
        self.query_one("#models-table", DataTable).add_columns(
            "Name", "Kind", "Version", "Format", "Task", "Device", "State"
        )
        self.action_refresh()
        self.set_interval(self.poll_s, self.poll)

    def action_refresh(self) -> None:
        self.load_models()

    @work(exclusive=True, group="models-list", exit_on_error=False)
    async def load_models(self) -> None:
        table = self.query_one("#models-table", DataTable)
        self.models = await self.call("list models", self.backend.list_models, busy=table)
        cursor = table.cursor_row
        table.clear()
        for m in self.models:
            state = m.get("state") or ("READY" if m.get("loaded") else "UNAVAILABLE")
            table.add_row(
                m["name"],
                m.get("kind") or "",
                str(m.get("version") or "")[:10],
                m.get("format") or "",
                m.get("task") or "",
                m.get("device") or "",
                ("● " if state == "READY" else "") + state.lower(),
                key=m["name"],
            )
        if self.models:
            table.move_cursor(row=min(cursor, len(self.models) - 1))
            self._highlight(self.models[table.cursor_row]["name"])

    @on(DataTable.RowHighlighted, "#models-table")
    def _row(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value:
            self._highlight(event.row_key.value)

    def _highlight(self, name: str) -> None:
        if name == self.current:
            return
        self.current = name
        for spark in self.query(MetricSpark):
            spark.reset()
        row = next((m for m in self.models if m["name"] == name), {})
        self.query_one("#models-detail", Static).update(
            escape(
                f"{name} · {row.get('device') or '?'} · {'loaded' if row.get('loaded') else 'not loaded'}"
                f" · metrics of {self.backend.metrics_scope}"
            )
        )

    def action_toggle(self) -> None:
        row = next((m for m in self.models if m["name"] == self.current), None)
        if row is not None:
            self.set_loaded(row["name"], not row.get("loaded"))

    def action_load(self, loaded: bool) -> None:
        if self.current is None:
            self.notify("no model highlighted", severity="warning")
            return
        self.set_loaded(self.current, loaded)

    @work(exclusive=True, group="models-load", exit_on_error=False)
    async def set_loaded(self, name: str, loaded: bool) -> None:
        verb = "load" if loaded else "unload"
        await self.call(
            f"{verb} {name}", self.backend.set_model_loaded, name, loaded, busy=self.query_one("#models-table")
        )
        self.notify(f"{name} {verb}ed")
        self.current = None
        self.load_models()

    # ---- live metrics ----------------------------------------------------------------------
    @work(exclusive=True, group="models-poll", exit_on_error=False)
    async def poll(self) -> None:
        """Sample the metrics of the highlighted model (silently skipped while the backend is busy)."""
        if self.current is None or not self.is_current:
            return
        try:  # no busy label and no notification every second: a failure shows in the detail line
            stats = await asyncio.to_thread(self.backend.model_stats)
        except Exception as exc:  # noqa: BLE001
            self.query_one("#models-detail", Static).update(escape(f"{self.current}: metrics unavailable ({exc})"))
            return
        self.show_stats(stats, time.monotonic())

    def show_stats(self, stats: dict[str, dict], now: float) -> None:
        """Turn two successive samples of cumulative counters into one point per sparkline:
        requests/s, mean request latency and mean batch size over the interval between them."""
        name = self.current or ""
        # a model that has served nothing yet has no series: count it as zeros
        s = stats.get(name) or empty_sample()
        before = self.last.get(name)
        self.last[name] = (now, dict(s))
        kv = s.get("kv_cache_usage")
        bar = self.query_one("#kv-bar", ProgressBar)
        if isinstance(kv, (int, float)):
            extra = ""
            if before is not None and now > before[0] and "generation_tokens" in s:
                rate = (s["generation_tokens"] - before[1].get("generation_tokens", 0.0)) / (now - before[0])
                extra = f" · {rate:,.1f} tokens/s · {int(s.get('running') or 0)} running"
            self.query_one("#kv-label", Label).update(f"KV cache: {kv * 100:.1f}% of blocks in use{extra}")
            bar.update(progress=kv * 100)
        else:
            self.query_one("#kv-label", Label).update("KV cache: - (not a generative model)")
            bar.update(progress=0)
        if before is None or now <= before[0]:
            return  # the first sample only sets the baseline
        t0, p = before
        dt = now - t0
        self.query_one("#spark-throughput", MetricSpark).push(max(0.0, (s["requests"] - p["requests"]) / dt))
        n = s["latency_count"] - p["latency_count"]
        if n > 0:
            self.query_one("#spark-latency", MetricSpark).push((s["latency_sum_s"] - p["latency_sum_s"]) / n * 1000.0)
        b = s["batch_count"] - p["batch_count"]
        if b > 0:
            self.query_one("#spark-batch", MetricSpark).push((s["batch_sum"] - p["batch_sum"]) / b)
