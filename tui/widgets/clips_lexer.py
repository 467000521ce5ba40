"""A forgiving CLIPS tokenizer for editor highlighting (never raises, works on half-typed text).

The validating parser lives in `rules` and is reached through the backend; highlighting must
keep working on text that does not parse, so it uses this small regular-expression lexer
whose token classes follow the CLIPS 6.4 Basic Programming Guide, section 2.3 (primitive
data types: symbols, strings, integers, floats, variables; `;` comments to end of line) and
whose token boundaries follow the CLIPS scanner (scanner.c): tests/tui/test_clips_lexer.py checks
them against real CLIPS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CONSTRUCT_KEYWORDS = frozenset(
    "deftemplate deffacts defrule deffunction defglobal defmodule defclass defgeneric defmethod "
    "definstances defmessage-handler".split()
)
CE_KEYWORDS = frozenset(
    "test not and or exists forall logical declare salience auto-focus slot multislot field".split()
)
SPECIAL_FORMS = frozenset(
    "if then else while loop-for-count progn$ foreach switch case default bind return break".split()
)
CONSTANTS = frozenset({"TRUE", "FALSE", "nil", "crlf"})

# Characters that end a symbol, number or variable name in the CLIPS scanner (CLIPS 6.4
# scanner.c, `ScanSymbol`): white space, `"`, parentheses, `&`, `|`, `~`, `;` and `<`. A `<`
# ends the token before it, yet may begin a symbol (`<`, `<=`, `<>`, `<-`, `<b`): `?x<y` is the
# variable `?x` and the symbol `<y`; `3<4` the integer 3 and the symbol `<4`.
_DELIMITERS = r"""\s()";&|~<"""
_END = rf"(?![^{_DELIMITERS}])"  # the token runs to a delimiter or the end of the line

# Order matters: the first alternative that matches at a position wins.
_TOKEN = re.compile(
    rf"""
    (?P<comment>;[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"?)
  | (?P<lparen>\()
  | (?P<rparen>\))
  | (?P<arrow>(?:=>|<-){_END})
  | (?P<variable>\$?\?(?:\*|[^\W\d_])[^{_DELIMITERS}]*|\$?\?)
  | (?P<number>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?{_END})
  | (?P<connective>[&|~]|[:=](?=\())
  | (?P<symbol><?[^{_DELIMITERS}]+|<)
  | (?P<space>\s+)
    """,
    re.VERBOSE,
)


@dataclass(slots=True, frozen=True)
class Token:
    """One token: highlight `kind`, 0-based `line`, 0-based character `start`/`end` columns on that line."""

    kind: str
    line: int
    start: int
    end: int
    text: str


def tokenize(text: str) -> list[Token]:
    """Split CLIPS source into highlight tokens (whitespace and parentheses dropped).

    Kinds: comment, string, keyword, keyword.operator, variable, number, constant.builtin,
    type (a template or construct name), function.call (the head of a call), symbol.
    Strings and comments never span lines here: an unterminated string stops at the line end,
    which keeps highlighting stable while a person is typing.
    """
    tokens: list[Token] = []
    for line_no, line in enumerate(text.split("\n")):
        after_paren = False
        after_construct = False
        for match in _TOKEN.finditer(line):
            kind = match.lastgroup or "symbol"
            word = match.group()
            if kind == "space":
                continue
            if kind == "lparen":
                after_paren = True
                continue
            if kind == "rparen":
                after_paren = False
                continue
            head, after_paren = after_paren, False
            if kind == "arrow" or kind == "connective":
                kind = "keyword.operator"
            elif kind == "symbol":
                if word in CONSTRUCT_KEYWORDS and head:
                    kind, after_construct = "keyword", True
                    tokens.append(Token(kind, line_no, match.start(), match.end(), word))
                    continue
                if after_construct:
                    kind = "type"
                elif head and (word in CE_KEYWORDS or word in SPECIAL_FORMS):
                    kind = "keyword"
                elif word in CONSTANTS:
                    kind = "constant.builtin"
                elif head:
                    kind = "function.call"
            after_construct = False
            tokens.append(Token(kind, line_no, match.start(), match.end(), word))
    return tokens
