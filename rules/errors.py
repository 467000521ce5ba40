"""Located diagnostics and the errors that carry them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Diagnostic:
    """One problem in a rule file, at a 1-based `line` and `column`; `str()` gives `file:line:col: message`."""

    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column, "message": self.message}


class RuleError(Exception):
    """A rule file (or several) could not be accepted; `.diagnostics` lists every located problem."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics) or "rule error")


class RuleSyntaxError(RuleError):
    """The text is not well-formed CLIPS (tokens or construct structure)."""


class RuleValidationError(RuleError):
    """Well-formed text that CLIPS would reject or that refers to something undefined."""


class UnsafeConstructError(RuleValidationError):
    """The text calls a function that reaches the operating system (and unsafe use was not allowed)."""
