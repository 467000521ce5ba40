"""Recorded runs: `GET /v1/runs`, `GET /v1/runs/{id}` (provenance and trace)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query

from ..deps import ServingDep
from ..errors import V1_ERRORS

router = APIRouter(prefix="/v1/runs", tags=["runs"], responses=V1_ERRORS)


@router.get("", operation_id="list_runs", summary="Recorded runs, newest first.")
async def list_runs(
    serving: ServingDep,
    pipeline: str | None = None,
    status: Literal["succeeded", "failed"] | None = None,
    limit: int = Query(50, ge=1, le=1000),
) -> dict[str, Any]:
    return {"runs": await serving.list_runs(pipeline, status, limit)}


@router.get(
    "/{run_id}", operation_id="get_run", summary="One recorded run: inputs, outputs, versions used, explanation, trace."
)
async def get_run(run_id: str, serving: ServingDep) -> dict[str, Any]:
    """A unique prefix of 4+ characters of the id is enough."""
    return await serving.get_run(run_id)
