"""Errors raised by forward chaining.

Every error that ends an evaluation early carries the partial result (`partial`) so that a
caller loses nothing: the text printed so far, the firings so far and the working memory
at the moment the run stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .result import ForwardResult


class ForwardError(RuntimeError):
    """Base class of forward-chaining errors."""


class KnowledgeBaseLoadError(ForwardError):
    """CLIPS refused a construct of a knowledge base; the message names `file:line:col`.

    Attributes:
        file, line, column: where the construct starts (None when the text could not be split).
        reason: the message without its location, e.g. "CLIPS refused this defrule: [PRCCODE3] ...".
        halted: why loading was interrupted ("timeout" or "memory"); "" when CLIPS refused the construct.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        reason: str | None = None,
        halted: str = "",
    ):
        super().__init__(message)
        self.file, self.line, self.column = file, line, column
        self.reason = message if reason is None else reason
        self.halted = halted


class FactAssertError(ForwardError):
    """A fact given as data could not be asserted (unknown template or slot, wrong type)."""


class RunawayError(ForwardError):
    """An evaluation hit its firing limit or its time limit with activations still on the agenda.

    Attributes:
        partial: the result up to the stop (working memory, firings, printed text).
        last_rules: names of the last rules fired, oldest first (at most 10).
    """

    def __init__(self, message: str, partial: ForwardResult, last_rules: list[str]):
        super().__init__(message)
        self.partial = partial
        self.last_rules = last_rules


class FiringLimitError(RunawayError):
    """The run fired `max_firings` rules and the agenda was still not empty."""


class EvaluationTimeout(RunawayError):
    """The run exceeded its time limit (seconds) with activations still on the agenda."""


class MemoryLimitError(RunawayError):
    """CLIPS held more memory than the evaluation's limit (bytes); the run was halted."""


class EvaluationCancelled(ForwardError):
    """The caller cancelled the evaluation (`cancellation.Cancellation`, e.g. its HTTP client left); it was
    halted as a time limit halts one.

    Attributes:
        partial: the result up to the stop (None when it was cancelled before it started).
        fired: rules fired before the stop.
    """

    def __init__(self, message: str, partial: ForwardResult | None, fired: int):
        super().__init__(message)
        self.partial = partial
        self.fired = fired


class RuleExecutionError(ForwardError):
    """A rule's right-hand side failed at run time (CLIPS printed an error and halted).

    Attributes:
        partial: the result up to the failure; `partial.messages` holds CLIPS's error text.
    """

    def __init__(self, message: str, partial: ForwardResult):
        super().__init__(message)
        self.partial = partial
