"""Liveness, readiness and Prometheus metrics: `/healthz`, `/readyz`, `/metrics`."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST

from ..deps import ServingDep

router = APIRouter(tags=["health"])


@router.get("/healthz", operation_id="healthz", summary="Liveness: the process answers.")
async def healthz() -> dict[str, str]:
    """Always `{"status": "ok"}` while the server runs."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    operation_id="readyz",
    summary="Readiness: 200 once every served model is loaded, 503 before (or if loading failed).",
    responses={503: {"description": "Still loading, or loading failed (`error` says why)."}},
)
async def readyz(serving: ServingDep) -> JSONResponse:
    """`{"ready": bool, "models": {name: state}, "error": str | null}`; status 200 only when ready."""
    body = serving.readiness()
    headers = {} if body["ready"] else {"Retry-After": "1"}
    return JSONResponse(body, status_code=200 if body["ready"] else 503, headers=headers)


@router.get(
    "/metrics", operation_id="metrics", summary="Prometheus metrics: runtime (models, generation, pipelines) and HTTP."
)
async def metrics(request: Request, serving: ServingDep) -> Response:
    """Text exposition format 0.0.4 of every registry: the neural runtime's, the generation engine's
    and the HTTP metrics of this app."""
    payload = serving.metrics_text() + request.app.state.http_metrics_text()
    return Response(payload, media_type=CONTENT_TYPE_LATEST)
