"""The serving layer between the HTTP API and the runtime: what `api/` calls, in one place.

The `Workbench` facade (`workbench.workbench`) runs pipelines and knowledge bases; this package
adds what a server needs on top of it and what the facade does not offer:

- model inference in tensor form (KServe v2): the request's batch axis is split into rows that
  enter the model's dynamic batcher (`neural.batching`) as separate requests, admitted all or
  none, so concurrent HTTP requests share batches; the rows' outputs are stacked back
  (`models.py`);
- model metadata and readiness in the protocol's terms (served inputs and outputs);
- generation (OpenAI-style) through the generation engine, streaming, with cancellation by
  request id so a client that disconnects frees its KV-cache blocks, and knowledge-base rails
  (`generation.py`);
- pipelines, runs and knowledge bases over the facade, blocking calls moved off the event loop
  (`library.py`);
- start-up loading in the background (readiness), Prometheus text of every registry
  (`service.py`).

`api/` imports only `workbench`; runtime errors (`neural`, `chaining`, `rules`, pipeline
errors) are translated into the `ServingError` classes of `errors.py`, which the API maps to HTTP.
"""

from .errors import (
    AmbiguousIdError,
    BadInputError,
    ConflictError,
    DeadlineError,
    ExecutionError,
    InvalidDocumentError,
    LimitExceededError,
    NotFoundError,
    OverloadedError,
    ServingError,
    UnavailableError,
)
from .generation import GenerationDelta
from .models import InferenceOutput, ServedModel, ServedTensor
from .service import Serving

__all__ = [
    "AmbiguousIdError",
    "BadInputError",
    "ConflictError",
    "DeadlineError",
    "ExecutionError",
    "GenerationDelta",
    "InferenceOutput",
    "InvalidDocumentError",
    "LimitExceededError",
    "NotFoundError",
    "OverloadedError",
    "ServedModel",
    "ServedTensor",
    "Serving",
    "ServingError",
    "UnavailableError",
]
