"""`HelpScreen`: every key binding active where help was opened, plus the screen's own notes."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Markdown, Static

GLOBAL_HELP = """\
`1`–`6` switch screens (from lists and trees), `Tab` moves focus, `Ctrl+P` palette, `Ctrl+Q` quits;
⏳ in the top bar shows background work.
"""


def format_key(key: str) -> str:
    """`ctrl+s` -> `Ctrl+S`, `question_mark` -> `?` (readable key names for the table)."""
    names = {"question_mark": "?", "escape": "Esc", "enter": "Enter", "delete": "Del", "space": "Space"}
    parts = [names.get(p, p.upper() if len(p) == 1 else p.capitalize()) for p in key.split("+")]
    return "+".join(parts)


class HelpScreen(ModalScreen[None]):
    """Modal list of bindings: (key, action description, where it applies)."""

    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close help")]
    CSS_PATH = Path(__file__).with_name("help.tcss")

    def __init__(self, title: str, notes: str, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.title_text, self.notes, self.rows = title, notes, rows

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(f"[b]Help — {escape(self.title_text)}[/b]   (Esc closes)", id="help-title")
            yield Markdown(GLOBAL_HELP + "\n" + self.notes, id="help-notes")
            table = DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)
            table.add_columns("Key", "Action", "Where")
            for row in self.rows:
                table.add_row(*row)
            yield table

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
