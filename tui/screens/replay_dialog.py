"""`ReplayDialog`: edit a knowledge base used by a recorded run, then replay the run with it."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from ..widgets.clips_editor import ClipsEditor, Marker


class ReplayDialog(ModalScreen[str | None]):
    """Full-size editor of one knowledge base's text; ctrl+r replays with it, esc cancels (nothing
    happens, the file is never changed). `diagnostics` (from a refused replay) are marked in the text."""

    # priority: the editor would otherwise take esc (it moves focus, and it is the only widget here)
    BINDINGS = [
        Binding("ctrl+r", "accept", "Replay", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]
    DEFAULT_CSS = """
    ReplayDialog { align: center middle; }
    #replay-box { width: 100%; height: 100%; border: thick $accent; background: $surface; }
    #replay-title { height: auto; }
    """

    def __init__(self, name: str, text: str, diagnostics: list[dict] | None = None) -> None:
        super().__init__()
        self.kb_name, self.text = name, text
        self.diagnostics = diagnostics or []

    def compose(self) -> ComposeResult:
        with Vertical(id="replay-box"):
            title = (
                f"[b]Edit {escape(self.kb_name)} for the replay[/b] — ctrl+r replay · "
                "esc cancel (the file is not changed)"
            )
            if self.diagnostics:
                first = self.diagnostics[0]
                where = f"{first.get('line')}:{first.get('column')}" if first.get("line") else ""
                title += (
                    f"\n[red]the replay was refused: {len(self.diagnostics)} problem(s), first at {where}: "
                    f"{escape(str(first.get('message')))}[/]"
                )
            yield Static(title, id="replay-title")
            yield ClipsEditor(self.text, id="replay-editor")

    def on_mount(self) -> None:
        editor = self.query_one(ClipsEditor)
        located = [d for d in self.diagnostics if d.get("line")]
        editor.set_markers([Marker(int(d["line"]), int(d.get("column") or 1), str(d["message"])) for d in located])
        if located:
            editor.goto(int(located[0]["line"]), int(located[0].get("column") or 1))
        editor.focus()

    def action_accept(self) -> None:
        self.dismiss(self.query_one(ClipsEditor).text)

    def action_cancel(self) -> None:
        self.dismiss(None)
