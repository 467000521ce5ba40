"""Splitting rule-file text into top-level constructs, each with its starting line.

CLIPS's `Build` takes one construct at a time; the 6.4 API clipspy exposes has no
load-from-string, and loading files from disk is exactly what we avoid (sources are loaded
only after validation, from the validated text). Strings (with backslash escapes) and `;`
comments are skipped while balancing parentheses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Construct:
    """One top-level form: its text, the file it came from and its 1-based line and column."""

    text: str
    file: str
    line: int
    column: int

    @property
    def kind(self) -> str:
        """The construct keyword, e.g. "defrule"."""
        head = self.text[1:].lstrip().split(None, 1)
        return head[0] if head else ""


class ConstructSyntaxError(ValueError):
    """Unbalanced parentheses or an unterminated string; the message is `file:line:col: message`."""


def split_constructs(text: str, file: str = "<string>") -> list[Construct]:
    """Top-level parenthesised forms of `text`, in order.

    Raises:
        ConstructSyntaxError: text outside a form, an unclosed form or an unterminated string.
    """
    out: list[Construct] = []
    i, n = 0, len(text)
    line, col = 1, 1
    depth = 0
    start = (0, 1, 1)
    if text.startswith("\ufeff"):  # a UTF-8 byte-order mark: CLIPS's `load` skips it (as `rules.parse` does)
        i, col = 1, 2
    while i < n:
        c = text[i]
        if c == ";":  # a comment ends at LF or CR, as in CLIPS's scanner
            while i < n and text[i] not in "\n\r":
                i += 1
                col += 1
            continue
        if c == '"':
            s_line, s_col = line, col
            i += 1
            col += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                    col += 1
                if text[i] == "\n":
                    line, col = line + 1, 0
                i += 1
                col += 1
            if i >= n:
                raise ConstructSyntaxError(f"{file}:{s_line}:{s_col}: unterminated string")
            i += 1
            col += 1
            continue
        if c == "(":
            if depth == 0:
                start = (i, line, col)
            depth += 1
        elif c == ")":
            if depth == 0:
                raise ConstructSyntaxError(f"{file}:{line}:{col}: unbalanced ')' outside any construct")
            depth -= 1
            if depth == 0:
                out.append(Construct(text[start[0] : i + 1], file, start[1], start[2]))
        elif depth == 0 and c not in " \t\n\r\f":  # CLIPS's whitespace (not \v, not Unicode spaces)
            raise ConstructSyntaxError(f"{file}:{line}:{col}: expected '(' to start a construct, found {c!r}")
        if c == "\n":
            line, col = line + 1, 1
        else:
            col += 1
        i += 1
    if depth:
        raise ConstructSyntaxError(f"{file}:{start[1]}:{start[2]}: construct not closed: missing {depth} ')'")
    return out
