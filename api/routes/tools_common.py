"""What the TUI-serving routes share: the facade behind the app, and the consultations registry."""

from __future__ import annotations

import threading
from typing import Any

from fastapi import Request

from workbench.consultation import (
    ConsultationError,
    ConsultationNotFoundError,
    Consultations,
    TooManyConsultationsError,
)
from workbench.serving import Serving
from workbench.serving.errors import ConflictError, NotFoundError, OverloadedError, ServingError, UnavailableError

_LOCK = threading.Lock()


def workbench_of(serving: Serving) -> Any:
    """The `Workbench` facade once start-up loading has finished. Raises UnavailableError (503) before."""
    serving.require_ready()
    if serving.workbench is None:
        raise UnavailableError("no workbench is configured on this server", 30.0)
    return serving.workbench


def consultations_of(request: Request, serving: Serving) -> Consultations:
    """The app's consultations (made on first use; one event-loop thread for all of them)."""
    wb = workbench_of(serving)
    with _LOCK:
        registry = getattr(request.app.state, "consultations", None)
        if registry is None or registry.workbench is not wb:
            registry = Consultations(wb)
            request.app.state.consultations = registry
    return registry


def serving_error(exc: Exception) -> ServingError:
    """Consultation errors as the API's errors (404 unknown id, 409 a call that does not fit the state)."""
    if isinstance(exc, TooManyConsultationsError):
        return OverloadedError(str(exc), 5.0)
    if isinstance(exc, ConsultationNotFoundError):
        return NotFoundError("consultation", exc.name)._with(str(exc))
    if isinstance(exc, ConsultationError):
        return ConflictError(str(exc))
    raise exc
