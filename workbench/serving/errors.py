"""Errors of the serving layer (each maps to one HTTP status in `api/errors.py`) and the
translation of runtime errors (`rules`, `chaining`, `neural`, `workbench.pipeline`) into them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

log = logging.getLogger("workbench.serving")


class ServingError(Exception):
    """Base class. `message` is safe to show a client (never a stack trace)."""

    def __init__(self, message: str, *, param: str | None = None, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.details = details or []


class NotFoundError(ServingError):
    """No such pipeline, knowledge base, model, version or run (HTTP 404)."""

    def __init__(self, kind: str, name: str, known: Iterable[str] | None = None) -> None:
        msg = f"no {kind} named {name!r}"
        if known is not None:
            names = sorted(known)
            msg += "; known: " + (", ".join(names[:20]) + (" ..." if len(names) > 20 else "") if names else "(none)")
        super().__init__(msg, param=kind)
        self.kind = kind
        self.name = name

    def _with(self, message: str) -> NotFoundError:
        """Replace the message with the runtime's own (it already names what exists)."""
        self.message = message
        self.args = (message,)
        return self


class BadInputError(ServingError):
    """The request is well-formed but wrong for its target (HTTP 400 for tensors, 422 for documents)."""


class InvalidDocumentError(ServingError):
    """An uploaded pipeline or knowledge base does not validate; `details` holds located errors (HTTP 422)."""


class ConflictError(ServingError):
    """The operation conflicts with the current state (HTTP 409)."""


class AmbiguousIdError(ConflictError):
    """An id prefix that more than one resource shares; `details` lists some of the matching ids (HTTP 409,
    code `ambiguous_id`)."""


class OverloadedError(ServingError):
    """A queue is full and nothing was admitted (HTTP 429 with Retry-After)."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


#: Retry-After of a request refused because a model it needs was unloaded: it comes back only when loaded.
UNLOADED_RETRY_AFTER_S = 30.0


class UnavailableError(ServingError):
    """Not ready yet, or shutting down (HTTP 503 with Retry-After)."""

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DeadlineError(ServingError):
    """The request's time limit passed (HTTP 504)."""


class LimitExceededError(ServingError):
    """A run stopped at a limit the request set or accepted, e.g. its firing limit or proof depth (HTTP 422)."""


class ExecutionError(ServingError):
    """The model, rules or pipeline failed while running this request (HTTP 500, message kept)."""


async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a blocking facade call in a thread, translating its errors to ServingError."""
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except ServingError:
        raise
    except Exception as exc:
        raise translate(exc) from exc


async def acall(coro: Any) -> Any:
    try:
        return await coro
    except ServingError:
        raise
    except Exception as exc:
        raise translate(exc) from exc


def translate(exc: BaseException) -> ServingError:
    """Map an error of `rules`, `chaining`, `neural` or `workbench.pipeline` to a ServingError."""
    from neural import errors as ne
    from workbench.pipeline import errors as pe

    if isinstance(exc, ServingError):
        return exc
    if isinstance(exc, pe.ModelUnloadedError):  # not ready until someone loads it (Triton: ensemble not ready)
        where = (
            f"pipeline {exc.pipeline!r} needs model {exc.name!r} (node {exc.node!r}), which"
            if exc.pipeline
            else f"model {exc.name!r}"
        )
        return UnavailableError(
            f"{where} was unloaded; POST /v2/repository/models/{exc.name}/load loads it again", UNLOADED_RETRY_AFTER_S
        )
    if isinstance(exc, pe.AmbiguousRunIdError):
        return AmbiguousIdError(str(exc), param="run_id", details=[{"run_id": m} for m in exc.matches])
    if isinstance(exc, pe.KnowledgeBaseConflictError):
        return ConflictError(str(exc), param="name")
    if isinstance(exc, pe.NotFoundError):
        return NotFoundError(exc.kind, exc.name)._with(str(exc))
    if isinstance(exc, ne.ModelNotFoundError):
        return NotFoundError("model", exc.name)._with(str(exc))
    if isinstance(exc, pe.PipelineValidationError):
        details = [i.to_dict() for i in exc.issues]
        first = exc.issues[0] if exc.issues else None
        return InvalidDocumentError(
            str(exc),
            param=(f"{first.node}.{first.field}" if first and first.node else first.field if first else None),
            details=details,
        )
    if isinstance(exc, pe.KnowledgeBaseError):
        details = [d.to_dict() if hasattr(d, "to_dict") else {"message": str(d)} for d in exc.diagnostics]
        return InvalidDocumentError(str(exc), param="text", details=details)
    if isinstance(exc, pe.InputValidationError):
        # param: the JSON path in the run input (`$.pixels[3]`: the front end says where its body holds
        # the input), or `node.field` of the pipeline when no field of the input is at fault
        param = f"{exc.node}.{exc.field}" if isinstance(exc, pe.ModelInputError) else exc.field
        return BadInputError(str(exc), param=param, details=[{"node": exc.node, "loc": exc.field, "msg": exc.message}])
    if isinstance(exc, ne.QueueFullError):
        return OverloadedError(str(exc), exc.retry_after_s)
    if isinstance(exc, ne.RequestTimeoutError):
        return DeadlineError(str(exc))
    if isinstance(exc, ne.BatcherClosedError):
        return UnavailableError(str(exc), 5.0)
    if isinstance(exc, ne.InputValidationError):
        return BadInputError(str(exc), param=exc.input_name)
    if isinstance(exc, pe.RunFailedError):
        return ExecutionError(str(exc))
    runaway = _limit_error(exc)
    if runaway is not None:
        return runaway
    from chaining.backward import GoalSyntaxError

    if isinstance(exc, GoalSyntaxError):  # `goal:LINE:COL: ...`: the request's goal field is at fault
        return BadInputError(str(exc), param="goal")
    if _is_rule_error(exc):
        diags = getattr(exc, "diagnostics", None)
        details = [d.to_dict() for d in diags] if diags else []
        if details:
            return InvalidDocumentError(str(exc), details=details)
        return BadInputError(str(exc))
    if isinstance(exc, pe.WorkbenchError):
        return ExecutionError(str(exc))
    if isinstance(exc, (ValueError, KeyError, TypeError, LookupError)):
        return BadInputError(str(exc))
    log.error("unexpected error in the serving layer", exc_info=exc)
    return ServingError(f"internal error ({type(exc).__name__})")


def _limit_error(exc: BaseException) -> ServingError | None:
    """A reasoner stopped by a limit: its time limit is a deadline (504), any other limit is 422."""
    from chaining.backward import DepthLimitError, ProofTimeout
    from chaining.forward import EvaluationTimeout, RunawayError

    if isinstance(exc, (EvaluationTimeout, ProofTimeout)):
        return DeadlineError(str(exc))
    if isinstance(exc, (RunawayError, DepthLimitError)):
        return LimitExceededError(str(exc))
    return None


def _is_rule_error(exc: BaseException) -> bool:
    from chaining.forward import ForwardError
    from rules.errors import RuleError
    from rules.facts import FactError

    if isinstance(exc, (RuleError, FactError)):
        return True
    if isinstance(exc, ForwardError):
        return True
    try:
        from chaining.backward import BackwardError  # type: ignore[attr-defined]
    except ImportError:
        return False
    return isinstance(exc, BackwardError)


def code_of(err: ServingError) -> str:
    return {
        NotFoundError: "not_found",
        BadInputError: "validation_failed",
        InvalidDocumentError: "validation_failed",
        OverloadedError: "queue_full",
        UnavailableError: "unavailable",
        DeadlineError: "timeout",
        ExecutionError: "execution_failed",
        LimitExceededError: "limit_exceeded",
        ConflictError: "conflict",
        AmbiguousIdError: "ambiguous_id",
    }.get(type(err), "internal_error")
