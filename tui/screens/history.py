"""History screen: recorded runs filtered by pipeline, status and time; Enter opens one."""

from __future__ import annotations

from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Select, Static

from .base import WorkbenchScreen
from .run_detail import RunDetailScreen

#: most runs listed at once (the newest); the count line says when there may be more
LIMIT = 200
WINDOWS = [("any time", 0), ("last hour", 3600), ("last day", 86400), ("last week", 7 * 86400)]
STATUSES = ["succeeded", "failed"]


class HistoryScreen(WorkbenchScreen):
    """Browse recorded runs."""

    MODE = "history"
    #: Focus goes here when the screen opens (before its first load marks it loading; see WorkbenchScreen.call).
    AUTO_FOCUS = "#hist-table"
    HOME = "#hist-table"
    TITLE = "History"
    CSS_PATH = Path(__file__).with_name("history.tcss")
    HELP = """\
Recorded runs, newest first. The three selectors filter by pipeline, status and time window.
**Enter** opens a run: its provenance (exact versions), explanation and timing, and **r** there
replays it with an edited knowledge base. **r** here reloads the list.
"""
    BINDINGS = [Binding("r", "reload", "Reload")]

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[dict] = []

    def body(self) -> ComposeResult:
        with Vertical():
            with Horizontal(id="hist-filters"):
                yield Select([], prompt="all pipelines", id="hist-pipeline")
                yield Select([(s, s) for s in STATUSES], prompt="any status", id="hist-status")
                yield Select(WINDOWS[1:], prompt="any time", id="hist-window")
            yield Static("", id="hist-count", classes="pane-title")
            yield DataTable(id="hist-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#hist-table", DataTable).add_columns("Run", "Pipeline", "Version", "Status", "Started", "ms")
        self.load_pipelines()
        self.reload()

    def on_screen_resume(self) -> None:
        self.reload()

    @work(exclusive=True, group="hist-pipelines", exit_on_error=False)
    async def load_pipelines(self) -> None:
        rows = await self.call("list pipelines", self.backend.list_pipelines)
        self.query_one("#hist-pipeline", Select).set_options([(r["name"], r["name"]) for r in rows])

    @on(Select.Changed)
    def _filter_changed(self) -> None:
        self.reload()

    def action_reload(self) -> None:
        self.reload()

    def _filters(self) -> tuple[str | None, str | None, float | None]:
        def value(widget_id: str):
            v = self.query_one(widget_id, Select).value
            return None if v is Select.NULL else v

        window = value("#hist-window")
        return value("#hist-pipeline"), value("#hist-status"), float(window) if window else None

    @work(exclusive=True, group="hist-runs", exit_on_error=False)
    async def reload(self) -> None:
        pipeline, status, since = self._filters()
        table = self.query_one("#hist-table", DataTable)
        keep = self._cursor_run(table)  # the run the cursor is on stays under it after the reload
        self.runs = await self.call(
            "list runs",
            self.backend.list_runs,
            pipeline=pipeline,
            status=status,
            since_s=since,
            limit=LIMIT,
            busy=table,
        )
        table.clear()
        for r in self.runs:
            started = str(r.get("started_at") or "")[:19].replace("T", " ")
            ms = f"{float(r.get('duration_s') or 0) * 1000:.1f}"
            status_text = r.get("status") or ""
            table.add_row(
                str(r.get("run_id"))[:8],
                r.get("pipeline") or "",
                str(r.get("version") or "")[:8],
                status_text,
                started,
                ms,
                key=str(r.get("run_id")),
            )
        ids = [str(r.get("run_id")) for r in self.runs]
        if keep in ids:
            table.move_cursor(row=ids.index(keep))
        shown = [x for x in (pipeline, status) if x]
        where = f" ({', '.join(shown)})" if shown else ""
        count = f"the newest {len(self.runs)} runs" if len(self.runs) >= LIMIT else f"{len(self.runs)} run(s)"
        self.query_one("#hist-count", Static).update(f"{count}{where} — enter opens one")

    @staticmethod
    def _cursor_run(table: DataTable) -> str | None:
        if not table.row_count:
            return None
        try:
            return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - no cursor yet
            return None

    @on(DataTable.RowSelected, "#hist-table")
    def _open(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.open_run(event.row_key.value)

    def open_run(self, run_id: str) -> None:
        """Push the detail screen for one run."""
        self.app.push_screen(RunDetailScreen(run_id))
