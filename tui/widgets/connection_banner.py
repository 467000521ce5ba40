"""`ConnectionBanner`: one line under the nav bar in remote mode — connected, reconnecting or
disconnected from the server, and what to do when it is gone."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

STYLES = {"connected": "green", "reconnecting": "bold yellow", "disconnected": "bold red"}


class ConnectionBanner(Static):
    """Follows the app's `connection` (`{"state", "detail"}`), refreshed by the app's pings."""

    DEFAULT_CSS = """
    ConnectionBanner { height: 1; background: $panel; }
    """

    state: reactive[dict] = reactive(dict, always_update=True)

    def __init__(self, url: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.url = url

    def on_mount(self) -> None:
        self.watch(self.app, "connection", self._set_state)

    def _set_state(self, value: dict) -> None:
        self.state = dict(value)

    def render(self) -> Text:
        state = self.state.get("state", "connected")
        detail = self.state.get("detail") or ""
        line = {
            "connected": f"● connected to {self.url}",
            "reconnecting": f"◌ reconnecting to {self.url} ({detail}) — retrying every 2 s",
            "disconnected": f"✗ disconnected from {self.url} ({detail}) — start `workbench serve` there or "
            "restart the TUI with another --url; it reconnects by itself",
        }.get(state, state)
        return Text(line, style=STYLES.get(state, ""), no_wrap=True, overflow="ellipsis")
