"""Liveness, readiness and Prometheus metrics: `/healthz`, `/readyz`, `/metrics`."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST

from ..deps import ServingDep
from ..schemas.responses import Liveness, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", operation_id="healthz", summary="Liveness: the process answers.")
async def healthz() -> Liveness:
    """Always `{"status": "ok"}` while the server runs."""
    return Liveness()


@router.get(
    "/readyz",
    operation_id="readyz",
    summary="Readiness: 200 once every served model is loaded, 503 before (or if loading failed).",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "Still loading, or loading failed (`error` says why)."}},
)
async def readyz(serving: ServingDep) -> Response:
    """`{"ready", "state", "models": {name: ready}, "error"}`; status 200 only when ready."""
    body = Readiness.model_validate(serving.readiness())
    if body.ready:
        return JSONResponse(body.model_dump(), status_code=200)
    return JSONResponse(body.model_dump(), status_code=503, headers={"Retry-After": "1"})


@router.get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics: runtime (models, generation, pipelines) and HTTP.",
    response_class=PlainTextResponse,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request, serving: ServingDep) -> Response:
    """Text exposition format 0.0.4 of every registry: the neural runtime's, the generation engine's
    and the HTTP metrics of this app."""
    payload = serving.metrics_text()
    if not serving.multiprocess:  # with several workers the shared files hold the HTTP metrics too
        payload += request.app.state.http_metrics_text()
    return Response(payload, media_type=CONTENT_TYPE_LATEST)
