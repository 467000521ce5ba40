"""`ReplayDialog`: edit a knowledge base used by a recorded run, then replay the run with it."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from ..widgets.clips_editor import ClipsEditor


class ReplayDialog(ModalScreen[str | None]):
    """Full-size editor of one knowledge base's text; Ctrl+R replays with it, Esc cancels."""

    BINDINGS = [Binding("ctrl+r", "accept", "Replay", priority=True), Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ReplayDialog { align: center middle; }
    #replay-box { width: 100%; height: 100%; border: thick $accent; background: $surface; }
    #replay-title { height: 1; }
    """

    def __init__(self, name: str, text: str) -> None:
        super().__init__()
        self.kb_name, self.text = name, text

    def compose(self) -> ComposeResult:
        with Vertical(id="replay-box"):
            yield Static(
                f"[b]Edit {escape(self.kb_name)} for the replay[/b] — Ctrl+R replay · Esc cancel (the file is not "
                "changed)",
                id="replay-title",
            )
            yield ClipsEditor(self.text, id="replay-editor")

    def on_mount(self) -> None:
        self.query_one(ClipsEditor).focus()

    def action_accept(self) -> None:
        self.dismiss(self.query_one(ClipsEditor).text)

    def action_cancel(self) -> None:
        self.dismiss(None)
