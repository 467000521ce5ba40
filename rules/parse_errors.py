"""Turning the grammar's exceptions into located, readable diagnostics.

Says what was found, what was expected and, for a truncated file, which construct was left
open (found by a scan that skips strings and comments).
"""

from __future__ import annotations

import re

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .errors import Diagnostic

CONSTRUCT_KEYWORDS = (
    "deftemplate",
    "deffacts",
    "defrule",
    "deffunction",
    "defglobal",
    "defmodule",
    "defclass",
    "defgeneric",
    "defmethod",
    "definstances",
    "defmessage-handler",
)

_FRIENDLY = {
    "LPAR": "'('",
    "RPAR": "')'",
    "SYMBOL": "a symbol",
    "STRING": "a string",
    "INTEGER": "an integer",
    "FLOAT": "a float",
    "SFVAR": "a variable such as ?x",
    "MFVAR": "a multifield variable such as $?x",
    "GLOBALVAR": "a global variable such as ?*x*",
    "SFWILD": "'?'",
    "MFWILD": "'$?'",
    "THEN": "'=>'",
    "INSTANCE_NAME": "an instance name such as [x]",
    "SLOT_KIND": "'slot' or 'multislot'",
    "OPAQUE_KIND": "a construct keyword",
    "NOT_CONN": "'~'",
    "COLON": "':'",
    "EQUALS": "'='",
    "$END": "end of file",
    **{f"_{k.upper()}": f"'{k}'" for k in CONSTRUCT_KEYWORDS[:6]},
}


_COMMENT_END = re.compile(r"[\n\r]")


def open_parens(text: str, upto: int, start: int = 0) -> list[tuple[int, int, int]]:
    """The '(' still open at offset `upto`, outermost first, as (offset, line, column); strings and
    comments skipped (a comment ends at LF or CR, as the grammar's). `start`: an offset where none is
    open, to scan from (the start of the construct being read)."""
    stack: list[tuple[int, int, int]] = []
    i, line, col = start, text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)
    while i < upto:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            seg = text[i : j + 1]
            nl = seg.count("\n")
            line, col = (line + nl, len(seg) - seg.rfind("\n")) if nl else (line, col + len(seg))
            i = j + 1
            continue
        if ch == ";":
            m = _COMMENT_END.search(text, i)
            j = m.start() if m else len(text)
            col += j - i
            i = j
            continue
        if ch == "(":
            stack.append((i, line, col))
        elif ch == ")" and stack:
            stack.pop()
        if ch == "\n":
            line, col = line + 1, 1
        else:
            col += 1
        i += 1
    return stack


def _construct_at(text: str, offset: int, start: int = 0) -> str | None:
    stack = open_parens(text, offset, start)
    if not stack:
        return None
    start = stack[0][0] + 1
    word = text[start : start + 40].split()
    return f"{word[0] if word else '('} starting at line {stack[0][1]}, column {stack[0][2]}"


def _expected(exc: UnexpectedInput, parser: Lark) -> str:
    names = sorted(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or [])
    out: list[str] = []
    for name in names:
        if name in _FRIENDLY:
            out.append(_FRIENDLY[name])
            continue
        try:
            term = parser.get_terminal(name)
            out.append(f"'{term.pattern.value}'" if term.pattern.type == "str" else name.lower())
        except KeyError:
            out.append(name.lower())
    out = sorted(set(out))
    if len(out) > 8:
        out = out[:8] + ["..."]
    return ", ".join(out)


def _unclosed_before_next(text: str, offset: int, filename: str, start: int = 0) -> Diagnostic | None:
    """A construct left open when a later line starts a new construct at column 1: blame the open one."""
    stack = open_parens(text, offset, start)
    if not stack:
        return None
    start, line, col = stack[0]
    for m in re.finditer(r"(?m)^\((def[a-z-]*)\b", text[start + 1 : offset]):
        next_line = text.count("\n", 0, start + 1 + m.start()) + 1
        where = _construct_at(text, start + 1, stack[0][0])
        return Diagnostic(
            filename,
            line,
            col,
            f"'(' of the {where.split(' starting')[0] if where else 'construct'} "
            f"is not closed before the next construct ({m.group(1)}) at line {next_line}",
        )
    return None


def diagnostic(exc: UnexpectedInput, text: str, filename: str, parser: Lark, start: int = 0) -> Diagnostic:
    """A located diagnostic for the grammar's exception `exc` on `text`. `start`: an offset before
    the error where no parenthesis is open (the start of the construct the grammar read alone), from
    which the open parentheses are counted; the diagnostic is the same as from 0."""
    line, column = getattr(exc, "line", 1) or 1, getattr(exc, "column", 1) or 1
    offset = getattr(exc, "pos_in_stream", None)
    if isinstance(exc, UnexpectedToken):
        offset = exc.token.start_pos if exc.token.type != "$END" else len(text)
    if isinstance(exc, UnexpectedEOF):
        offset = len(text)
    if offset is not None:
        blamed = _unclosed_before_next(text, offset, filename, start)
        if blamed is not None:
            return blamed
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        if ch == '"':
            return Diagnostic(filename, line, column, "unterminated string: no closing '\"' before the end of the file")
        where = _construct_at(text, exc.pos_in_stream, start)
        ctx = f" in {where}" if where else ""
        pos = exc.pos_in_stream
        after = text[pos + 1 : pos + 3] if ch == "?" else text[pos + 2 : pos + 3] if text.startswith("$?", pos) else ""
        if after:
            return Diagnostic(
                filename,
                line,
                column,
                f"[SCANNER2] the character {after[0]!r} is not valid as the first character of a variable name "
                f"(a variable name starts with a letter){ctx}",
            )
        if ch and (ch < " " or ch == "\x7f"):
            return Diagnostic(
                filename,
                line,
                column,
                f"unprintable character {ch!r}{ctx}: outside strings and comments CLIPS reads it as "
                "<<<unprintable character>>> and refuses the construct; remove it",
            )
        return Diagnostic(
            filename, line, column, f"unexpected character {ch!r}{ctx}; expected {_expected(exc, parser)}"
        )
    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        stack = open_parens(text, len(text), start)
        end_line = text.count("\n") + 1
        end_col = len(text) - (text.rfind("\n") + 1) + 1
        if stack:
            where = _construct_at(text, len(text), start)
            return Diagnostic(
                filename,
                end_line,
                end_col,
                f"unexpected end of file: {len(stack)} unclosed '(' ({where}); expected ')'",
            )
        return Diagnostic(filename, end_line, end_col, f"unexpected end of file; expected {_expected(exc, parser)}")
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    shown = str(tok.value)
    offset = tok.start_pos or 0
    stack = open_parens(text, offset, start)
    if tok.type == "RPAR" and not stack:
        return Diagnostic(filename, line, column, "unmatched ')': no construct is open here")
    if len(stack) == 1 and text[stack[0][0] + 1 : offset].strip() == "":
        return Diagnostic(
            filename, line, column, f"unknown construct {shown!r}; expected one of: {', '.join(CONSTRUCT_KEYWORDS)}"
        )
    if not stack and tok.type != "LPAR":
        return Diagnostic(filename, line, column, f"unexpected {shown!r} outside any construct; expected '('")
    where = _construct_at(text, offset, start)
    ctx = f" in {where}" if where else ""
    return Diagnostic(filename, line, column, f"unexpected {shown!r}{ctx}; expected {_expected(exc, parser)}")
