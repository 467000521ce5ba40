"""Errors of the backward prover; each message names the goal or premise at fault."""

from __future__ import annotations


class BackwardError(Exception):
    """Base class for backward-chaining errors."""


class GoalSyntaxError(BackwardError):
    """A goal text is not one CLIPS pattern (message is `goal:line:col: ...`)."""


class EvaluationError(BackwardError):
    """CLIPS could not evaluate an expression (unbound variable, type error, ...)."""


class DepthLimitError(BackwardError):
    """The chain of subgoals grew past `ProverConfig.max_depth`; `.chain` lists the goals, outermost first."""

    def __init__(self, message: str, chain: list[str]):
        super().__init__(message)
        self.chain = chain


class ProofTimeout(BackwardError):
    """The proof ran past `ProverConfig.timeout` seconds; `.goal` is the goal being proved then."""

    def __init__(self, message: str, goal: str):
        super().__init__(message)
        self.goal = goal


class ProofCancelled(BackwardError):
    """The caller cancelled the proof (`Session.prove(..., cancel=c)`, `c.cancel()`; e.g. its HTTP client
    left): it stopped between two resolution steps, or its CLIPS evaluation was halted. `.seconds`: how
    long it ran; `.steps`: the resolution steps it took (0 when it was cancelled before it started)."""

    def __init__(self, message: str, seconds: float = 0.0, steps: int = 0):
        super().__init__(message)
        self.seconds = seconds
        self.steps = steps


class NotStratifiedError(BackwardError):
    """`not` over a goal that depends on the goal being proved (negation through recursion)."""


class AskError(BackwardError):
    """A provider gave an answer outside the allowed answers, or no provider was configured."""
