"""Located diagnostics and the errors that carry them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Diagnostic:
    """One problem in a rule file, at a 1-based `line` and `column`.

    `severity` is "error" (the file is refused) or "warning" (CLIPS loads the file, perhaps
    skipping a construct, as the message says; `--strict` refuses it). `str()` gives
    `file:line:col: message`, with `warning: ` before the message for warnings.
    """

    file: str
    line: int
    column: int
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        tag = "warning: " if self.severity == "warning" else ""
        return f"{self.file}:{self.line}:{self.column}: {tag}{self.message}"

    def to_dict(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "severity": self.severity,
        }


class RuleError(Exception):
    """A rule file (or several) could not be accepted; `.diagnostics` lists every located problem.

    `unchecked`: files that could not be read or parsed; the other files of the same knowledge base
    were checked without them (a name defined only there reads as undefined)."""

    def __init__(self, diagnostics: list[Diagnostic], unchecked: list[str] | tuple[str, ...] = ()):
        self.diagnostics = list(diagnostics)
        self.unchecked = list(unchecked)
        super().__init__("\n".join(str(d) for d in self.diagnostics) or "rule error")


class RuleSyntaxError(RuleError):
    """The text is not well-formed CLIPS (tokens or construct structure)."""


class RuleValidationError(RuleError):
    """Well-formed text that CLIPS would reject or that refers to something undefined."""


class UnsafeConstructError(RuleValidationError):
    """The text calls a function that reaches the operating system (and unsafe use was not allowed)."""
