"""`MetricSpark`: a labelled sparkline over the last samples of one metric, drawn from zero.

Bars are scaled from 0 to the largest sample shown (never from the data's minimum: a steady
30 req/s draws as steady bars at full height, not as an alternation of full and empty), and the
label names the value, its unit and the scale's top.
"""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Label

SAMPLES = 60
BARS = " ▁▂▃▄▅▆▇█"


def bar_rows(values: list[float], width: int, height: int) -> list[str]:
    """Rows of bar characters (top row first) for the last `width` values, scaled from 0 to their max.
    A value > 0 always shows at least the lowest bar; 0 shows nothing."""
    shown = values[-width:] if width > 0 else []
    top = max(shown, default=0.0)
    levels = (len(BARS) - 1) * height
    rows = [[" "] * len(shown) for _ in range(height)]
    for x, v in enumerate(shown):
        n = 0 if top <= 0 or v <= 0 else max(1, round(v / top * levels))
        for r in range(height):  # r = 0 is the bottom row
            part = min(len(BARS) - 1, max(0, n - r * (len(BARS) - 1)))
            rows[height - 1 - r][x] = BARS[part]
    return ["".join(row).ljust(width) for row in rows]


class ZeroSparkline(Widget):
    """Bars of `data` from a zero baseline (see `bar_rows`)."""

    DEFAULT_CSS = """
    ZeroSparkline { height: 2; color: $accent; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.data: list[float] = []

    def set_data(self, data: list[float]) -> None:
        self.data = list(data)
        self.refresh()

    def render(self) -> Text:
        width, height = self.size.width, max(1, self.size.height)
        baseline = "▁" * width if not self.data else None
        rows = [" " * width] * (height - 1) + [baseline] if baseline else bar_rows(self.data, width, height)
        return Text("\n".join(rows), no_wrap=True)


class MetricSpark(Horizontal):
    """`title value unit (0–max unit)` on the left, the last `SAMPLES` values as bars on the right."""

    DEFAULT_CSS = """
    MetricSpark { height: 2; }
    MetricSpark > Label { width: 30; padding: 0 1; }
    MetricSpark > ZeroSparkline { width: 1fr; height: 2; }
    """

    def __init__(self, title: str, unit: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.title, self.unit = title, unit
        self.samples: deque[float] = deque(maxlen=SAMPLES)

    def compose(self) -> ComposeResult:
        yield Label(f"{self.title}: -")
        yield ZeroSparkline()

    def reset(self) -> None:
        self.samples.clear()
        self.query_one(Label).update(f"{self.title}: -")
        self.query_one(ZeroSparkline).set_data([])

    def push(self, value: float | None) -> None:
        """Add one sample (None shows '-' and adds nothing)."""
        if value is None:
            self.query_one(Label).update(f"{self.title}: -")
            return
        self.samples.append(float(value))
        top = max(self.samples)
        self.query_one(Label).update(f"{self.title}: {value:,.2f} {self.unit}\n[dim]bars 0–{top:,.4g} {self.unit}[/]")
        self.query_one(ZeroSparkline).set_data(list(self.samples))
