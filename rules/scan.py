"""Fast scanning of rule-file text before the grammar runs: comments, nesting depth, NUL bytes,
and plain-data `deffacts`, which never go through the grammar.

A `deffacts` whose facts hold only constants (symbols, strings, numbers, as in the published
Waltz and Manners data sets) is recognised by one regular expression and kept as `FactData`:
its text span, with the AST built only if someone reads the facts. Validation reads such data
through `FactData.relations()` / `FactData.flat` without building it. Everything else is left to
the LALR grammar; the data spans are blanked (newlines kept) so positions stay exact.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence

from . import ast
from .native_read import module as _reader
from .native_scan import module as _native

MAX_NESTING = 1000
"""Deepest parenthesis nesting accepted; deeper text is refused with a located error.

CLIPS itself (a recursive C parser) loads 10,000 levels and overflows its C stack somewhere
below 50,000; 1,000 is far above anything a person writes and keeps every consumer safe."""

# Whitespace and `;` comments between tokens (possessive: a failed match never backtracks).
_WS = r"(?:[ \t\n\r\f]++|;[^\n\r]*+)*+"
_END = r"(?=[ \t\n\r\f\"();]|\Z)"
# A constant of plain data: a string, or a symbol / number token (no variables, no instance names).
# The rest of a plain symbol: CLIPS ends a symbol at `<` and at control characters too (`a<b` is
# two tokens); text with those, or with Unicode whitespace, is left to the grammar.
_TAIL = r'[^\s"()&|~;<\x00-\x1f\x7f]*+'
_STRING = r'"(?:[^"\\\x00]++|\\[^\x00])*+"'
_WORD = rf"(?!<-|=(?=[ \t\n\r\f\"();]|\Z))[A-Za-z0-9_+\-.*/!%^@#:=<>,'`{{}}\]\\]{_TAIL}{_END}"
_ATOM = rf"(?:{_STRING}|{_WORD})"
_NAME = rf"[A-Za-z_]{_TAIL}{_END}"
_ORDERED = rf"\({_WS}{_NAME}(?:{_WS}{_ATOM})*+{_WS}\)"
_TEMPLATE = rf"\({_WS}{_NAME}(?:{_WS}\({_WS}{_NAME}(?:{_WS}{_ATOM})*+{_WS}\))++{_WS}\)"
_DEFFACTS = re.compile(
    rf"\({_WS}deffacts{_END}{_WS}(?P<name>{_NAME})(?:{_WS}(?P<comment>{_STRING}))?+"
    rf"(?P<body>(?:{_WS}(?:{_ORDERED}|{_TEMPLATE}))*+){_WS}\)"
)
_BODY_HAS_NESTED = re.compile(rf"\({_WS}{_NAME}{_WS}\(")
_LONG_DIGITS = re.compile(r"[0-9]{19}")
_INTEGER = re.compile(r'[+-]?\d+(?![^\s"()&|~;])')
_FLOAT = re.compile(r'[+-]?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![^\s"()&|~;])')
_SKIP = re.compile(_WS)
_SPACE = re.compile(r"[ \t\n\r\f]*")  # CLIPS's whitespace (not \v, not Unicode spaces)
# Strings, comments and parentheses: what decides nesting and where constructs end.
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|;[^\n\r]*|[()]', re.S)
_RELATION = re.compile(rf"{_STRING}|;[^\n\r]*|\({_WS}({_NAME})")
_FACT_ITER = re.compile(
    rf";[^\n\r]*|\({_WS}(?P<name>{_NAME})(?P<slots>(?:{_WS}\({_WS}{_NAME}(?:{_WS}{_ATOM})*+{_WS}\))*+)"
    rf"(?P<fields>(?:{_WS}{_ATOM})*+){_WS}\)"
)
_SLOT_ITER = re.compile(rf";[^\n\r]*|\({_WS}(?P<name>{_NAME})(?P<values>(?:{_WS}{_ATOM})*+){_WS}\)")
_VALUE_ITER = re.compile(rf";[^\n\r]*|(?P<value>{_ATOM})")
_ONE_VALUE = re.compile(rf"{_WS}{_ATOM}{_WS}")
_TOKEN = re.compile(rf'{_STRING}|;[^\n\r]*|[()]|[^\s"()&|~;]+')
# Shapes of plain data: every value becomes \x01 (a value follows whitespace, `)` or a string, or
# is a string; names follow `(` directly), whitespace is dropped, facts are split at `)(`.
_SHAPE_VALUE = re.compile(rf'(?<=[\s)"])(?:{_STRING}|[^\s"()&|~;]++)|{_STRING}')
_SHAPE_OPEN_SPACE = re.compile(r"\(\s++")
_SHAPE_COMMENT = re.compile(rf"({_STRING})|;[^\n\r]*")
_SHAPE_FACT = re.compile(r"\((?P<name>[^()\x01]++)(?P<slots>(?:\([^()\x01]++\x01*+\))*+)(?P<fields>\x01*+)\)")
_SHAPE_SLOT = re.compile(r"\(([^()\x01]++)(\x01*+)\)")
_SHAPE_SPLIT = re.compile(r"\((?:[^()]++|\([^()]*+\))*+\)")


class ScanError(Exception):
    """Text refused before parsing: `offset` into the text and a message."""

    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset, self.message = offset, message


class Lines:
    """Offset -> (line, column), 1-based, by binary search over the newline offsets (found on first use)."""

    __slots__ = ("text", "_starts", "_lookups")

    def __init__(self, text: str):
        self.text = text
        self._starts: list[int] | None = None
        self._lookups = 0

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        return self._starts

    def at(self, offset: int) -> tuple[int, int]:
        if self._starts is None and self._lookups < 8:  # a few look-ups: count, without the table
            self._lookups += 1
            return self.text.count("\n", 0, offset) + 1, offset - self.text.rfind("\n", 0, offset)
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i] + 1

    def pos(self, start: int, end: int) -> ast.Pos:
        line, col = self.at(start)
        end_line, end_col = self.at(end)
        return ast.Pos(line, col, end_line, end_col, start, end)


class FactData(Sequence):
    """The facts of a plain-data deffacts, built into `ast.Call`s only when read.

    Equality, iteration, `len` and indexing behave as for the list of facts. `flat` is True
    when every fact is an ordered fact of constants; `relations()` gives each fact's relation
    name and offset without building anything.
    """

    __slots__ = ("text", "start", "end", "lines", "flat", "_items")

    def __init__(self, text: str, start: int, end: int, lines: Lines):
        self.text, self.start, self.end, self.lines = text, start, end, lines
        if _native is not None and text.isascii():
            self.flat = not _native.has_nested(text, start, end)
        else:
            self.flat = _BODY_HAS_NESTED.search(text, start, end) is None
        self._items: list[ast.Call] | None = None

    def relations(self) -> Iterator[tuple[str, int]]:
        """(relation name, offset of the name) of every fact, in order (flat data only)."""
        for m in _RELATION.finditer(self.text, self.start, self.end):
            if m.group(1) is not None:
                yield m.group(1), m.start(1)

    def relation_names(self) -> set[str]:
        """The relation (first field) of every fact, without building anything."""
        return {m.group("name") for m in _FACT_ITER.finditer(self.text, self.start, self.end) if m.group("name")}

    def template_facts(self) -> Iterator[tuple[str, int, list[tuple[str, int, int, int]]]]:
        """(relation, offset, [(slot, offset, values start, values end)]) of every fact, in order.

        An ordered fact's fields come as one pseudo-slot named "". Read the values of a span
        with `values()`; `single()` says whether a span holds exactly one value.
        """
        text, slot_iter = self.text, _SLOT_ITER.finditer
        for m in _FACT_ITER.finditer(text, self.start, self.end):
            name = m.group("name")
            if name is None:
                continue
            s0, s1 = m.span("slots")
            slots = [(g, sm.start(1), sm.start(2), sm.end(2)) for sm in slot_iter(text, s0, s1) if (g := sm.group(1))]
            f0, f1 = m.span("fields")
            if f1 > f0 and not text[f0:f1].isspace():
                slots.append(("", f0, f0, f1))
            yield name, m.start("name"), slots

    def shapes(self) -> list[tuple[str, list[tuple[str, int]], int]] | None:
        """The distinct shapes of the facts: (relation, [(slot, number of values)], number of ordered
        fields), each shape once, in no particular order; None when the text is unusual (a `\\x01`
        in it). Reads the text in one pass in C (`rules.native_scan`, ASCII text) or with a few
        whole-text regular-expression passes (no per-fact Python), so data of thousands of facts of
        a few shapes is checked shape by shape."""
        if _native is not None and self.text.isascii():
            return _native.shapes(self.text, self.start, self.end)
        return self.shapes_by_regex()

    def shapes_by_regex(self) -> list[tuple[str, list[tuple[str, int]], int]] | None:
        """`shapes()` by the regular expressions (the fallback, and the reference of the C reader)."""
        body = self.text[self.start : self.end]
        if "\x01" in body:
            return None
        if ";" in body:
            body = _SHAPE_COMMENT.sub(r"\1", body)
        if _SHAPE_OPEN_SPACE.search(body):
            body = _SHAPE_OPEN_SPACE.sub("(", body)
        skeleton = "".join(_SHAPE_VALUE.sub("\x01", body).split())
        out = []
        for fact in set(_SHAPE_SPLIT.findall(skeleton)):
            m = _SHAPE_FACT.fullmatch(fact)
            if m is None:
                return None
            slots = [(name, len(values)) for name, values in _SHAPE_SLOT.findall(m.group("slots"))]
            out.append((m.group("name"), slots, len(m.group("fields"))))
        return out

    def values(self, start: int, end: int) -> list[tuple[str, int]]:
        """(token, offset) of the constants between `start` and `end`."""
        return [(m.group(), m.start()) for m in _VALUE_ITER.finditer(self.text, start, end) if m.group(1)]

    def single(self, start: int, end: int) -> bool:
        return _ONE_VALUE.fullmatch(self.text, start, end) is not None

    def _build(self) -> list[ast.Call]:
        if self._items is None:
            self._items = build_data(self.text, self.start, self.end, self.lines)
        return self._items

    def __len__(self) -> int:
        return len(self._build())

    def __getitem__(self, i):  # type: ignore[override]
        return self._build()[i]

    def __iter__(self):
        return iter(self._build())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (FactData, list)):
            return self._build() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._build())


def atom(token: str, pos: ast.Pos) -> ast.Atom:
    """A constant token of plain data as an `ast.Atom` (string, integer, float or symbol)."""
    if token[0] == '"':
        return ast.Atom("string", unescape_string(token), pos)
    if _INTEGER.fullmatch(token):
        return ast.Atom("integer", int(token), pos)
    if _FLOAT.fullmatch(token):
        return ast.Atom("float", float(token), pos)
    return ast.Atom("symbol", token, pos)


def unescape_string(token_text: str) -> str:
    """The value of a CLIPS string literal (quotes removed, `\\x` -> `x`)."""
    body = token_text[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", r"\1", body, flags=re.S)


def build_data(text: str, start: int, end: int, lines: Lines) -> list[ast.Call]:
    """The facts between `start` and `end` (parenthesised lists of constants) as `ast.Call`s."""
    out: list[ast.Call] = []
    stack: list[tuple[int, list]] = []
    for m in _TOKEN.finditer(text, start, end):
        tok = m.group()
        if tok[0] == ";":
            continue
        if tok == "(":
            stack.append((m.start(), []))
        elif tok == ")":
            begin, items = stack.pop()
            call = ast.Call(items, lines.pos(begin, m.end()))
            (stack[-1][1] if stack else out).append(call)
        else:
            stack[-1][1].append(atom(tok, lines.pos(m.start(), m.end())))
    return out


class DataMatch:
    """The spans of a data deffacts as the C reader found them, answering as `_DEFFACTS`'s
    `re.Match` does for the groups the parser reads (0: the whole match, "name", "comment", "body")."""

    __slots__ = ("string", "_spans")

    def __init__(self, text: str, pos: int, spans: tuple):
        end, n0, n1, c0, c1, b0, b1 = spans[:7]
        self.string = text
        self._spans = {0: (pos, end), "name": (n0, n1), "comment": (c0, c1), "body": (b0, b1)}

    def span(self, group: int | str = 0) -> tuple[int, int]:
        return self._spans[group]

    def start(self, group: int | str = 0) -> int:
        return self._spans[group][0]

    def end(self, group: int | str = 0) -> int:
        return self._spans[group][1]

    def group(self, group: int | str = 0) -> str | None:
        s, e = self._spans[group]
        return None if s < 0 else self.string[s:e]


def _match_data(text: str, pos: int, ascii_text: bool):
    """`_DEFFACTS.match(text, pos)` and whether its body holds 19 digits in a row, by the C reader
    for ASCII text when built, else by the regular expressions: (match or None, long digits)."""
    if _native is not None and ascii_text:
        spans = _native.match_deffacts(text, pos)
        if spans is None:
            return None, False
        return DataMatch(text, pos, spans), spans[7]
    m = _DEFFACTS.match(text, pos)
    if m is None:
        return None, False
    return m, _LONG_DIGITS.search(text, m.start("body"), m.end("body")) is not None


_TOO_DEEP = f"parentheses nested deeper than {MAX_NESTING} levels; the limit is {MAX_NESTING}"


def _skip(text: str, pos: int) -> int:
    return _SKIP.match(text, pos).end()


def _blank(text: str) -> str:
    return "\n".join(" " * len(line) for line in text.split("\n"))


def _split_native(text: str, data: list) -> None:
    """`_split` in C (`native_read.scan_constructs`), stopping at each deffacts for `_match_data`."""
    pos, ascii_text = 0, text.isascii()
    while True:
        status, pos = _reader.scan_constructs(text, pos, MAX_NESTING)
        if status == 3:
            raise ScanError(pos, _TOO_DEEP)
        if status != 0:
            return  # the end of the constructs, or one never closed: the grammar reports it
        m, long_digits = _match_data(text, pos, ascii_text)
        if m is not None and not long_digits:
            data.append((m.start(), m.end(), m))
            pos = m.end()
            continue
        end = _reader.construct_end(text, pos, MAX_NESTING)
        if end < -1:
            raise ScanError(-2 - end, _TOO_DEEP)
        if end == -1:
            return
        pos = end


def _split(text: str, data: list) -> None:
    """Append (start, end, match) of each top-level data deffacts to `data`; check nesting."""
    pos, n = 0, len(text)
    ascii_text = text.isascii()
    while pos < n:
        pos = _skip(text, pos)
        if pos >= n or text[pos] != "(":
            break
        m, long_digits = (
            _match_data(text, pos, ascii_text) if text.startswith("deffacts", _skip(text, pos + 1)) else (None, False)
        )
        if m is not None and not long_digits:
            data.append((m.start(), m.end(), m))
            pos = m.end()
            continue
        depth = 0
        for t in _STRUCTURE.finditer(text, pos):
            c = t.group()
            if c == "(":
                depth += 1
                if depth > MAX_NESTING:
                    raise ScanError(t.start(), _TOO_DEEP)
            elif c == ")":
                depth -= 1
                if depth == 0:
                    pos = t.end()
                    break
        else:
            break  # unclosed: the grammar reports it


def prescan(text: str) -> tuple[str, list[tuple[int, int, re.Match]], Lines]:
    """Split off plain-data deffacts and check nesting and NUL bytes; a leading UTF-8 byte-order
    mark is read as a space.

    Returns (the text with the data deffacts blanked, or "" when the text is nothing but data
    deffacts and whitespace, [(start, end, match)] of each data deffacts, line index).
    Raises ScanError for a NUL byte or nesting deeper than MAX_NESTING.
    Text the grammar will refuse anyway (unbalanced parentheses, an unclosed string) is passed
    on unchanged from the first problem on.
    """
    nul = text.find("\x00")
    if nul >= 0:
        raise ScanError(
            nul,
            "NUL character (\\0) in the text: CLIPS reads constructs as C strings and stops at it, "
            "so it refuses the construct; remove it",
        )
    if text.startswith("\ufeff"):  # a UTF-8 byte-order mark: CLIPS's `load` skips it; a space keeps every offset
        text = " " + text[1:]
    lines = Lines(text)
    data: list[tuple[int, int, re.Match]] = []
    (_split_native if _reader is not None else _split)(text, data)
    if not data:
        return text, data, lines
    between = [text[e0:s1] for (_, e0, _), (s1, _, _) in zip([(0, 0, None)] + data, data + [(len(text), 0, None)])]
    if all(_SPACE.fullmatch(piece) for piece in between):
        return "", data, lines  # nothing but data: nothing for the grammar
    pieces, last = [], 0
    for s, e, _ in data:
        pieces += [text[last:s], _blank(text[s:e])]
        last = e
    pieces.append(text[last:])
    return "".join(pieces), data, lines


def comments(text: str, lines: Lines) -> list[ast.Comment]:
    """Every `;` comment outside strings, in order, with its position (in C when built)."""
    if _reader is not None:
        return _reader.comments(text) if ";" in text else []
    out = []
    for m in _STRUCTURE.finditer(text) if ";" in text else ():
        s = m.group()
        if s[0] == ";":
            out.append(ast.Comment(s, lines.pos(m.start(), m.end())))
    return out
