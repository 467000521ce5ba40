"""Run screen: a form from the pipeline's input schema; run; outputs, explanation tree, timing per node."""

from __future__ import annotations

import json
from pathlib import Path

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Select, Static, TabbedContent, TabPane

from ..messages import RunFinished
from ..widgets.explanation_tree import ExplanationTree
from ..widgets.schema_form import SchemaForm
from ..widgets.timing_table import TimingTable
from .base import CallFailed, WorkbenchScreen


class RunScreen(WorkbenchScreen):
    """Run one input through a pipeline and read why it came out as it did."""

    MODE = "run"
    TITLE = "Run"
    HOME = "#run-pipeline"
    CSS_PATH = Path(__file__).with_name("run.tcss")
    HELP = """\
Choose a pipeline; the form follows its input schema (arrays and objects are typed as JSON;
the last recorded input of the pipeline is filled in when there is one). **ctrl+r** runs it;
**esc** leaves a field (digits then switch screens again).
The result has three tabs: **Outputs** (F2), **Explanation** (F3) (an expandable tree: gate decisions,
model calls with versions and batch sizes, overrides, proofs, and each output fact's
derivation; Space/Enter expands) and **Timing** per node (F4).
"""
    BINDINGS = [
        Binding("ctrl+r", "run", "Run"),
        Binding("f2", "show_tab('tab-outputs')", "Outputs"),
        Binding("f3", "show_tab('tab-explanation')", "Explanation"),
        Binding("f4", "show_tab('tab-timing')", "Timing"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pipeline: str | None = None
        self.result: dict | None = None
        self.prefilled = False

    def body(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="run-left"):
                yield Static("Pipeline", classes="pane-title")
                yield Select([], id="run-pipeline", prompt="choose a pipeline")
                yield Static("Input", classes="pane-title")
                yield SchemaForm(id="run-form")
                yield Static("ctrl+r run · esc leaves a field", classes="hint")
            with Vertical(id="run-right"):
                yield Static("no run yet", id="run-status", classes="pane-title")
                with TabbedContent(id="run-tabs"):
                    with TabPane("Outputs", id="tab-outputs"):
                        with VerticalScroll():
                            yield Static("", id="run-outputs")
                    with TabPane("Explanation", id="tab-explanation"):
                        yield ExplanationTree(id="run-explanation")
                    with TabPane("Timing", id="tab-timing"):
                        yield TimingTable(id="run-timing")

    def on_mount(self) -> None:
        self.load_pipelines()

    @work(exclusive=True, group="run-list", exit_on_error=False)
    async def load_pipelines(self) -> None:
        select = self.query_one("#run-pipeline", Select)
        rows = await self.call("list pipelines", self.backend.list_pipelines, busy=select)
        select.set_options([(r["name"], r["name"]) for r in rows])
        select.focus()

    def choose(self, name: str) -> None:
        """Select pipeline `name` (as if picked in the list)."""
        self.query_one("#run-pipeline", Select).value = name

    @on(Select.Changed, "#run-pipeline")
    def _pipeline_changed(self, event: Select.Changed) -> None:
        if event.value is not Select.NULL:
            self.load_form(str(event.value))

    @work(exclusive=True, group="run-form", exit_on_error=False)
    async def load_form(self, name: str) -> None:
        form = self.query_one(SchemaForm)
        doc = await self.call(f"open {name}", self.backend.get_pipeline, name, busy=form)
        schema = next((n.get("schema") for n in doc.get("nodes", []) if n.get("type") == "input"), None)
        last: dict = {}
        try:  # the last recorded input of this pipeline (runs carry their inputs; the id is `run_id`)
            runs = await self.call("last input", self.backend.list_runs, pipeline=name, limit=1)
            if runs:
                last = runs[0].get("inputs") or {}
                if not last and runs[0].get("run_id"):
                    last = (await self.call("last input", self.backend.get_run, runs[0]["run_id"])).get("inputs") or {}
        except CallFailed:  # already notified; the form works without a prefill
            last = {}
        self.pipeline = name
        form.build(schema, last)
        self.prefilled = bool(last)
        if last:
            self.query_one("#run-status", Static).update("the form holds the last recorded input — ctrl+r runs it")

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_run(self) -> None:
        if self.pipeline is None:
            self.notify("choose a pipeline first", severity="warning")
            return
        try:
            inputs = self.query_one(SchemaForm).value()
        except ValueError as exc:
            self.notify(str(exc), title="input", severity="error")
            return
        self.run_pipeline(self.pipeline, inputs)

    @work(exclusive=True, group="run-run", exit_on_error=False)
    async def run_pipeline(self, name: str, inputs: dict) -> None:
        tabs = self.query_one(TabbedContent)
        result = await self.call(f"run {name}", self.backend.run_pipeline, name, inputs, busy=tabs)
        self.show_result(result)
        self.post_message(RunFinished(result))

    def show_result(self, result: dict) -> None:
        """Fill the three tabs from a run record."""
        self.result = result
        ok = result.get("status") == "succeeded"
        total = (result.get("timings") or {}).get("total")
        took = f" · {total * 1000:.1f} ms" if isinstance(total, (int, float)) else ""
        cache = " · cache hit" if result.get("cache_hit") else ""
        state = "[green]succeeded[/]" if ok else f"[red]{result.get('status')}[/]"
        self.query_one("#run-status", Static).update(f"run {str(result.get('run_id') or '-')[:8]} {state}{took}{cache}")
        if ok:
            body = escape(json.dumps(result.get("outputs"), indent=2, ensure_ascii=False))
        else:
            body = f"[red]{escape(str(result.get('error')))}[/]"
        self.query_one("#run-outputs", Static).update(body)
        self.query_one(ExplanationTree).show(result.get("explanation"))
        self.query_one(TimingTable).show(*TimingTable.from_run(result))
        if not ok:
            self.notify(str(result.get("error")), title="run failed", severity="error")
