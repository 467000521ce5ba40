"""`HelpScreen`: every key binding active where help was opened, plus the screen's own notes.

Keys are written exactly as they are typed (`v`, `ctrl+s`, `f1`, `esc`): the same text as the
footer and the command palette's Keys panel (`WorkbenchApp.get_key_display` uses `format_key`).
"""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Markdown, Static

GLOBAL_HELP = """\
`1`–`6` switch screens (from lists, trees and tables; in a text field they type, and `esc` leaves
the field), `tab` moves focus, `ctrl+p` opens the palette (every action is there), `ctrl+q` quits;
⏳ in the top bar shows background work.
"""

NAMES = {
    "question_mark": "?",
    "escape": "esc",
    "enter": "enter",
    "delete": "delete",
    "space": "space",
    "slash": "/",
    "comma": ",",
    "full_stop": ".",
}


def format_key(key: str) -> str:
    """A key as it is typed: `ctrl+s` stays `ctrl+s`, `v` stays `v`, `escape` -> `esc`, `question_mark` -> `?`."""
    return "+".join(NAMES.get(p, p.lower()) for p in key.split("+"))


class HelpScreen(ModalScreen[None]):
    """Modal list of bindings: (key, action description, where it applies)."""

    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close help")]
    CSS_PATH = Path(__file__).with_name("help.tcss")

    def __init__(self, title: str, notes: str, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.title_text, self.notes, self.rows = title, notes, rows

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(f"[b]Help — {escape(self.title_text)}[/b]   (esc closes)", id="help-title")
            yield Markdown(GLOBAL_HELP + "\n" + self.notes, id="help-notes")
            table = DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)
            table.add_columns("Key", "Action", "Where")
            for row in self.rows:
                table.add_row(*row)
            yield table

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
