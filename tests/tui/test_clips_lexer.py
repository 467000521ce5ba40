"""The editor's CLIPS highlighter splits text where CLIPS itself does.

Oracle: real CLIPS (clipspy). `explode$` runs a string through the CLIPS scanner and returns its
tokens, so the highlighter's token texts must equal what CLIPS reads. The rule that matters for
`<` (CLIPS 6.4 scanner.c, `GetToken`/`ScanSymbol`): `<` ends a symbol, a number or a variable name,
yet may begin a symbol (`<`, `<=`, `<>`, `<-`, `<b`); so `?x<y` is the variable `?x` and the symbol
`<y`, `3<4` the integer 3 and the symbol `<4`, and `<<` two symbols.
"""

from __future__ import annotations

import clips
import pytest
from textual.app import App, ComposeResult

from tui.widgets.clips_editor import STYLES, ClipsEditor
from tui.widgets.clips_lexer import tokenize

LINES = [
    "a<b << < <= <> <-x =>x x>y",
    "?x<y 3<4 ?x.y ?é $?m ?*g* ?x-1 $foo",
    "?f <- (point (x ?x&:(< ?x 3)|~7)) =>",
    "(test (<= ?low ?v<?high))",
    "3abc -3 +. 1e5 3.5e<2 2.5",
    "(bind ?r (<> ?a ?b)) =(+ 1 2)",
]


def _clips_tokens(env: clips.Environment, line: str) -> list[object]:
    """The tokens CLIPS's scanner reads from `line` (parentheses dropped, as the highlighter does)."""
    assert '"' not in line and "\\" not in line
    return [v for v in env.eval(f'(explode$ "{line}")') if not (isinstance(v, clips.Symbol) and v in ("(", ")"))]


@pytest.mark.parametrize("line", LINES)
def test_tokens_match_the_clips_scanner(line: str) -> None:
    env = clips.Environment()
    ours = tokenize(line)
    theirs = _clips_tokens(env, line)
    assert [t.text for t in ours if t.kind != "number"] == [str(v) for v in theirs if not isinstance(v, int | float)], (
        line
    )
    numbers = [t for t in ours if t.kind == "number"]
    assert [float(t.text) for t in numbers] == [float(v) for v in theirs if isinstance(v, int | float)], line


def test_less_than_begins_a_symbol_but_ends_the_one_before() -> None:
    kinds = {t.text: t.kind for t in tokenize("?f <- (x ?a<b 3<4 <-y) (test (<= ?a 3))")}
    assert kinds == {
        "?f": "variable",
        "<-": "keyword.operator",  # the fact-address binding, only as a token of its own
        "x": "function.call",
        "?a": "variable",
        "<b": "symbol",
        "3": "number",
        "<4": "symbol",
        "<-y": "symbol",
        "test": "keyword",
        "<=": "function.call",
    }


class _EditorApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ClipsEditor("(test (< ?a<b 3<4))\n?f <-(p) <-x")


def _styled(line, style) -> list[str]:
    """The texts of `line` painted with exactly `style`."""
    return [line.plain[s.start : s.end] for s in line.spans if s.style == style]


async def test_editor_paints_the_spans_clips_reads() -> None:
    app = _EditorApp()
    async with app.run_test(size=(60, 8)) as pilot:
        await pilot.pause()
        editor = app.query_one(ClipsEditor)
        first = editor.get_line(0)
        assert _styled(first, STYLES["variable"]) == ["?a"]
        assert _styled(first, STYLES["number"]) == ["3"]
        assert _styled(first, STYLES["function.call"]) == ["<"]
        second = editor.get_line(1)
        assert _styled(second, STYLES["keyword.operator"]) == ["<-"]  # `<-x` is a plain symbol
