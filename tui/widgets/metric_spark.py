"""`MetricSpark`: a labelled sparkline over the last samples of one metric."""

from __future__ import annotations

from collections import deque

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, Sparkline

SAMPLES = 60


class MetricSpark(Horizontal):
    """`title value unit` on the left, a sparkline of the last `SAMPLES` values on the right."""

    DEFAULT_CSS = """
    MetricSpark { height: 2; }
    MetricSpark > Label { width: 26; padding: 0 1; }
    MetricSpark > Sparkline { width: 1fr; height: 2; }
    """

    def __init__(self, title: str, unit: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.title, self.unit = title, unit
        self.samples: deque[float] = deque(maxlen=SAMPLES)

    def compose(self) -> ComposeResult:
        yield Label(f"{self.title}: -")
        yield Sparkline([])

    def reset(self) -> None:
        self.samples.clear()
        self.query_one(Label).update(f"{self.title}: -")
        self.query_one(Sparkline).data = []

    def push(self, value: float | None) -> None:
        """Add one sample (None shows '-' and adds nothing)."""
        if value is None:
            self.query_one(Label).update(f"{self.title}: -")
            return
        self.samples.append(float(value))
        self.query_one(Label).update(f"{self.title}: {value:,.2f} {self.unit}")
        self.query_one(Sparkline).data = list(self.samples)
