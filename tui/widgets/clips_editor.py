"""`ClipsEditor`: a TextArea that highlights CLIPS and marks located errors.

No tree-sitter grammar for CLIPS exists, so highlighting comes from `clips_lexer.tokenize`
applied per line through TextArea's public `get_line` hook; diagnostics from the rule checker
(1-based line and column) are painted at their position.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.widgets import TextArea

from .clips_lexer import tokenize

# One palette that reads on dark and light themes.
STYLES: dict[str, Style] = {
    "comment": Style(color="#8a8a8a", italic=True),
    "string": Style(color="#d7af5f"),
    "keyword": Style(color="#d75f87", bold=True),
    "keyword.operator": Style(color="#d75f87"),
    "variable": Style(color="#5fafd7"),
    "number": Style(color="#af87ff"),
    "constant.builtin": Style(color="#af87ff", italic=True),
    "type": Style(color="#87af5f", bold=True),
    "function.call": Style(color="#87af5f"),
}
ERROR_AT = Style(color="white", bgcolor="red", bold=True)
ERROR_LINE = Style(underline=True)


@dataclass(slots=True, frozen=True)
class Marker:
    """A diagnostic placed in the editor: 1-based `line` and `column`, and its message."""

    line: int
    column: int
    message: str


class ClipsEditor(TextArea):
    """Editor for `.clp` files: CLIPS highlighting, line numbers, error markers."""

    DEFAULT_CSS = """
    ClipsEditor { height: 1fr; }
    """

    def __init__(self, text: str = "", **kwargs) -> None:
        kwargs.setdefault("show_line_numbers", True)
        kwargs.setdefault("tab_behavior", "indent")
        kwargs.setdefault("soft_wrap", False)
        super().__init__(text, **kwargs)
        self._markers: dict[int, list[Marker]] = {}

    @property
    def markers(self) -> list[Marker]:
        """Diagnostics currently shown, in line order."""
        return [m for line in sorted(self._markers) for m in self._markers[line]]

    def set_markers(self, markers: list[Marker]) -> None:
        """Show these diagnostics (replacing earlier ones) and repaint."""
        self._markers = {}
        for marker in markers:
            self._markers.setdefault(marker.line - 1, []).append(marker)
        # TextArea caches rendered lines by cursor/scroll state only; drop the cache so markers repaint.
        self._line_cache.clear()
        self.refresh()

    def clear_markers(self) -> None:
        """Remove all diagnostics."""
        self.set_markers([])

    def goto(self, line: int, column: int) -> None:
        """Move the cursor to a 1-based line and column and scroll it into view."""
        row = max(0, min(line - 1, self.document.line_count - 1))
        col = max(0, min(column - 1, len(self.document.get_line(row))))
        self.move_cursor((row, col), center=True)
        self.focus()

    def get_line(self, line_index: int) -> Text:
        """The line with CLIPS highlighting and any error marker applied."""
        line = super().get_line(line_index)
        plain = line.plain
        for token in tokenize(plain):
            style = STYLES.get(token.kind)
            if style is not None:
                line.stylize(style, token.start, token.end)
        for marker in self._markers.get(line_index, ()):
            start = max(0, min(marker.column - 1, len(plain)))
            if start < len(plain):
                line.stylize(ERROR_LINE, start, len(plain))
                line.stylize(ERROR_AT, start, start + 1)
            else:
                line.append(" ", ERROR_AT)
        return line
