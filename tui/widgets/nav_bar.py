"""`NavBar`: the one-line strip at the top of every screen: screens by number, and busy work."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

SCREENS: list[tuple[str, str]] = [
    ("pipelines", "Pipelines"),
    ("kb", "Rules"),
    ("run", "Run"),
    ("ask", "Ask"),
    ("models", "Models"),
    ("history", "History"),
]


class NavBar(Static):
    """Shows `1 Pipelines 2 Rules ...` with the current screen highlighted, then what is running."""

    DEFAULT_CSS = """
    NavBar { height: 1; background: $panel; color: $text-muted; }
    """

    busy: reactive[tuple[str, ...]] = reactive(tuple)

    def __init__(self, current: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.current = current

    def on_mount(self) -> None:
        self.watch(self.app, "busy_labels", self._set_busy)

    def _set_busy(self, labels: tuple[str, ...]) -> None:
        self.busy = labels

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for number, (mode, title) in enumerate(SCREENS, start=1):
            style = "bold reverse" if mode == self.current else ""
            text.append(f" {number} ", style="bold " + style)
            text.append(f"{title} ", style=style)
        if self.busy:
            text.append("  ⏳ " + ", ".join(self.busy), style="bold yellow")
        else:
            text.append("   f1 help", style="dim")
        return text
