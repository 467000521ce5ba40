"""`TimingTable`: seconds per node of a run as milliseconds with a proportional bar."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

BAR = 16


class TimingTable(DataTable):
    """Rows: node, status, milliseconds, bar (share of the slowest node)."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("Node", "Status", "ms", "")

    def show(self, timings: dict[str, float], skipped: list[str] | None = None, failed: str | None = None) -> None:
        """`timings` in seconds per node id (key "total" shown last); skipped nodes listed as such."""
        self.clear()
        per_node = {k: float(v) for k, v in timings.items() if k != "total" and isinstance(v, (int, float))}
        slowest = max(per_node.values(), default=0.0) or 1.0
        for node, seconds in per_node.items():
            status = "failed" if node == failed else "ran"
            bar = "█" * max(1, round(BAR * seconds / slowest)) if seconds > 0 else ""
            self.add_row(node, status, f"{seconds * 1000:.2f}", bar)
        for node in skipped or []:
            if node not in per_node:
                self.add_row(node, "skipped", "-", "")
        if "total" in timings:
            self.add_row("total", "", f"{float(timings['total']) * 1000:.2f}", "")

    @staticmethod
    def from_run(run: dict[str, Any]) -> tuple[dict[str, float], list[str], str | None]:
        return dict(run.get("timings") or {}), list(run.get("skipped") or []), run.get("failed_node")
