"""Errors raised by the neural runtime. Every message names the model and what was wrong."""

from __future__ import annotations


class NeuralError(Exception):
    """Base class of every error raised by `neural`."""


class ModelNotFoundError(NeuralError, KeyError):
    """No model is registered under the requested name (and version)."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"no model named {name!r} is registered; known models: {', '.join(known) or '(none)'}")

    def __str__(self) -> str:  # KeyError would quote the whole message
        return self.args[0]


class ModelLoadError(NeuralError):
    """A model file or directory could not be read or is not in a supported format."""


class InputValidationError(NeuralError, ValueError):
    """An input tensor is missing, unexpected, or has the wrong dtype or shape.

    Attributes: `model`, `input_name`, `expected` (e.g. "int64 [-1, -1]") and `got`.
    """

    def __init__(self, model: str, input_name: str, message: str, expected: str = "", got: str = "") -> None:
        self.model = model
        self.input_name = input_name
        self.expected = expected
        self.got = got
        super().__init__(f"model {model!r}, input {input_name!r}: {message}")


class QueueFullError(NeuralError):
    """The model's batcher queue is full; the request was NOT admitted (HTTP 429/503 with Retry-After).

    Attributes: `model`, `max_queue_size`, `retry_after_s` (an estimate in seconds).
    """

    def __init__(self, model: str, max_queue_size: int, retry_after_s: float) -> None:
        self.model = model
        self.max_queue_size = max_queue_size
        self.retry_after_s = retry_after_s
        super().__init__(
            f"model {model!r}: request queue is full ({max_queue_size} waiting); retry after about {retry_after_s:.3f} "
            "s"
        )


class BatcherClosedError(NeuralError):
    """The batcher is shut down (or shutting down) and admits no new requests."""


class RequestTimeoutError(NeuralError, TimeoutError):
    """A request's deadline passed before its result was ready (queued requests are then never run)."""

    def __init__(self, model: str, timeout_s: float, where: str) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.where = where
        super().__init__(
            f"model {model!r}: request timed out at its deadline, {timeout_s:g} s after submission ({where})"
        )


class BatchExecutionError(NeuralError):
    """The model raised while running a batch; only that batch's requests receive this error.

    Attributes: `model`, `batch_id`, `batch_size`; the model's exception is `__cause__`.
    """

    def __init__(self, model: str, batch_id: int, batch_size: int, cause: BaseException) -> None:
        self.model = model
        self.batch_id = batch_id
        self.batch_size = batch_size
        super().__init__(
            f"model {model!r} failed on batch {batch_id} ({batch_size} requests): {type(cause).__name__}: {cause}"
        )


class ExportError(NeuralError):
    """Export to ONNX failed, or the exported graph's outputs differ from torch beyond tolerance."""
