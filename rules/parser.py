"""CLIPS text -> AST (`rules.ast`), with located syntax errors.

Before anything else, `rules.scan` checks nesting depth and NUL bytes and takes plain-data
`deffacts` aside (they never reach a parser; their facts are built only when read). The rest
is read by the C reader (`rules.native_read`) when it is built, which builds the AST the grammar
would; any construct it does not read exactly as the grammar does (every syntax error among it)
goes, alone, to the grammar, `clips.lark` (LALR(1), contextual lexer; `rules.parser_lark`, which imports lark
only then), whose exceptions become `Diagnostic`s (`rules.parse_errors`). Parsing never
evaluates anything, and nothing here recurses once per nesting level of the input.
"""

from __future__ import annotations

from . import ast, native_read, scan
from .errors import Diagnostic, RuleSyntaxError
from .scan import unescape_string

__all__ = ["parse", "unescape_string", "MAX_CE_NESTING"]

MAX_CE_NESTING = 100
"""Deepest nesting of conditional elements (not/and/or/exists/forall/logical) accepted."""
LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)
_FROM_ERRORS = ("open_parens", "CONSTRUCT_KEYWORDS")
_FROM_GRAMMAR = ("_lark", "_plain_lark", "_fast_positions")


def __getattr__(name: str):
    """The grammar's side (lark), imported on first use: `open_parens`, `CONSTRUCT_KEYWORDS`, `_lark`..."""
    if name in _FROM_ERRORS:
        from . import parse_errors

        return getattr(parse_errors, name)
    if name in _FROM_GRAMMAR:
        from . import parser_lark

        return getattr(parser_lark, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse(text: str, filename: str = "<string>") -> ast.Module:
    """Parse CLIPS source text into an `ast.Module`.

    Args:
        text: the rule file's contents.
        filename: used in diagnostics and positions.

    Returns:
        The module; `module.diagnostics` holds warnings found while reading (an integer literal
        outside CLIPS's 64-bit range, which CLIPS reads as the nearest bound).

    Raises:
        RuleSyntaxError: with one located `Diagnostic` (the first syntax error; also NUL bytes
            and nesting deeper than `rules.scan.MAX_NESTING`).
    """
    try:
        lark_text, data, lines = scan.prescan(text)
    except scan.ScanError as exc:
        line, column = scan.Lines(text).at(exc.offset)
        raise RuleSyntaxError([Diagnostic(filename, line, column, exc.message)]) from None
    warnings: list[Diagnostic] = []
    if not lark_text:
        module = ast.Module(filename, [], text=text)
    elif native_read.module is not None:
        module = ast.Module(filename, _read_by_construct(text, lark_text, filename, lines, warnings), text=text)
    else:
        from .parser_lark import parse_by_grammar

        module, warnings = parse_by_grammar(text, lark_text, filename)
    if data:
        module.constructs.extend(_data_facts(text, m, lines) for _, _, m in data)
        module.constructs.sort(key=lambda c: c.pos.start_offset)
    module.diagnostics = warnings
    module.comments = scan.comments(text, lines)
    _attach_annotations(module)
    return module


def _read_by_construct(
    text: str, lark_text: str, filename: str, lines: scan.Lines, warnings: list[Diagnostic]
) -> list[ast.Construct]:
    """The constructs of `lark_text`: read by the C reader, except each construct it leaves to the
    grammar, which lark reads alone (from its "(" to the ")" closing it, or to the end of the text
    when never closed or when it does not start with "("), positions shifted to the file's. The
    outcome is the grammar's on the whole text: the first syntax error in the file, else the first
    error of the tree builder (a duplicate slot, CE nesting) in construct order, else the AST and
    the warnings (appended to `warnings`). Raises RuleSyntaxError."""
    constructs: list[ast.Construct] = []
    build_error: Diagnostic | None = None
    pos, n = 0, len(lark_text)
    while pos < n:
        line, column = lines.at(pos)
        got, stop, duplicate = native_read.read_from(lark_text, pos, line, pos - column + 1)
        constructs += got
        if duplicate is not None:
            if build_error is None:
                d_line, d_column, slot, template = duplicate
                build_error = Diagnostic(
                    filename, d_line, d_column, f"duplicate slot '{slot}' in deftemplate {template}"
                )
            pos = stop
            continue
        if stop >= n:
            break
        end = native_read.module.construct_end(lark_text, stop, scan.MAX_NESTING) if lark_text[stop] == "(" else -1
        end = n if end < 0 else end
        from .parser_lark import parse_piece

        got, piece_warnings, piece_error = parse_piece(text, lark_text, stop, end, filename, lines)
        constructs += got
        warnings += piece_warnings
        build_error = build_error or piece_error
        pos = end
    if build_error is not None:
        raise RuleSyntaxError([build_error])
    return constructs


def _data_facts(text: str, m, lines: scan.Lines) -> ast.FactsDef:
    comment = m.group("comment")
    facts = scan.FactData(text, m.start("body"), m.end("body"), lines)
    node = ast.FactsDef(
        m.group("name"),
        facts,  # type: ignore[arg-type]
        unescape_string(comment) if comment is not None else None,
        lines.pos(m.start(), m.end()),
    )
    node.text = m.group()
    return node


def integer_value(text: str) -> tuple[int, bool]:
    """(value, overflowed) of an integer literal as CLIPS reads it: outside the 64-bit range it
    is clamped to the nearest bound (CLIPS warns `[SCANNER1] Over or underflow of long long
    integer`). Literals of any length are safe (no `int()` on more than 20 digits)."""
    digits = text.lstrip("+-").lstrip("0")
    negative = text.startswith("-")
    if len(digits) <= 19:
        value = int(text)
        if LLONG_MIN <= value <= LLONG_MAX:
            return value, False
    return (LLONG_MIN if negative else LLONG_MAX), True


# ---- `;@` annotations ---------------------------------------------------------------------


def _attach_annotations(module: ast.Module) -> None:
    """Give each construct the `;@name value` comments on the lines right above it (no construct between)."""
    annotated = [c for c in module.comments if c.text.startswith(";@")]
    if not annotated:
        return
    prev_end = 0
    ci = 0
    for construct in module.constructs:
        start = construct.pos.line
        while ci < len(annotated) and annotated[ci].pos.line < start:
            c = annotated[ci]
            if c.pos.line > prev_end:
                key, _, value = c.text[2:].strip().partition(" ")
                construct.annotations[key] = value.strip()
            ci += 1
        prev_end = construct.pos.end_line
