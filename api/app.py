"""The application factory: `create_app(workbench=None) -> FastAPI`.

Served by `workbench serve` (uvicorn, `api.app:create_app` with `factory=True`), or mounted by
tests and scripts on their own `Workbench`. Resources, one router each in `api/routes/`:
pipelines and runs, knowledge bases, KServe v2 model inference, OpenAI-compatible generation,
health and metrics. Errors: `api/errors.py`. Reference: docs/api.md.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from prometheus_client import generate_latest

from workbench import __version__
from workbench.config import Settings, get_settings
from workbench.serving import Serving

from .errors import document_only_possible_errors, install_error_handlers
from .head import HeadAsGetMiddleware
from .http_metrics import HttpMetrics, HttpMetricsMiddleware
from .limits import RequestLimitsMiddleware
from .predict_fast import PredictFastPath
from .request_id import RequestIdMiddleware
from .routes import ROUTERS
from .shed import ShedMiddleware

log = logging.getLogger("api")

_DESCRIPTION = """Combined rule-and-model predictions over HTTP.

* `/v1/pipelines`, `/v1/runs`: pipelines (rules gating, post-processing and explaining model outputs) and their
  recorded runs.
* `/v1/kb`: knowledge bases: upload, forward chaining (`run`), backward chaining (`ask`).
* `/v2`: model inference in the Open Inference Protocol (KServe v2), JSON and binary tensors.
* `/v1/models`, `/v1/completions`, `/v1/chat/completions`: OpenAI-compatible generation, streaming as
  server-sent events.
* `/healthz`, `/readyz`, `/metrics`.

Errors under `/v1` are `{"error": {"code", "message", "type", "param", "details", "request_id"}}`;
under `/v2` they are `{"error": "..."}`. Request bodies are limited in size, inflated size, JSON
depth and encoding (413 / 400 / 422, see docs/api.md).
"""


def create_app(
    workbench: Any | None = None, *, serving: Serving | None = None, settings: Settings | None = None
) -> FastAPI:
    """Build the FastAPI app.

    Args:
        workbench: a `Workbench` facade to serve; None builds one from the settings (database,
            knowledge-base and pipeline folders) when the app starts.
        serving: a ready-made `Serving` (tests use it to serve their own models); overrides `workbench`.
        settings: defaults to `workbench.config.get_settings()` (environment `WORKBENCH_...`).

    The app loads models in the background after start-up: `/healthz` answers at once, `/readyz`
    answers 200 once loading has finished. On shutdown it closes what it created.
    """
    settings = settings or get_settings()
    serving = serving or Serving(workbench, settings=settings)
    http_metrics = HttpMetrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await serving.start()
        try:
            yield
        finally:
            consultations = getattr(app.state, "consultations", None)  # made on first use (routes/tools_common)
            if consultations is not None:
                consultations.close()
            await serving.stop()

    app = FastAPI(
        title="Workbench",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.settings = settings
    app.state.serving = serving
    app.state.http_metrics_text = lambda: generate_latest(http_metrics.registry).decode()
    install_error_handlers(app)
    for router in ROUTERS:
        document_only_possible_errors(router.routes)
        app.include_router(router)
    # Innermost (middlewares added first wrap closest to the router): plain single-input predicts are
    # answered here, after the limits, without FastAPI's routing and dependency solving.
    app.add_middleware(PredictFastPath, api=app, route=_route("predict"))
    app.add_middleware(RequestLimitsMiddleware, limits=settings.limits, routers=ROUTERS)
    app.add_middleware(ShedMiddleware, serving=serving)  # before the body is read: cheap 429s under overload
    app.add_middleware(HttpMetricsMiddleware, metrics=http_metrics)
    app.add_middleware(RequestIdMiddleware)
    app.add_middleware(HeadAsGetMiddleware)  # outermost: HEAD goes down as GET, the body is dropped
    return app


def _route(operation_id: str) -> APIRoute:
    """The API route with `operation_id` among the app's routers. Raises LookupError when there is none."""
    for router in ROUTERS:
        for r in router.routes:
            if isinstance(r, APIRoute) and r.operation_id == operation_id:
                return r
    raise LookupError(f"no route with operation id {operation_id!r}")
