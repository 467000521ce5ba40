"""Recorded runs: `GET /v1/runs` (summaries, paged), `GET /v1/runs/{id}` (inputs, outputs, trace)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query

from .. import paging
from ..deps import ServingDep
from ..errors import V1_ERRORS
from ..schemas.responses import RunDetail, RunPage, RunSummary

router = APIRouter(prefix="/v1/runs", tags=["runs"], responses=V1_ERRORS)


@router.get("", operation_id="list_runs", summary="Recorded runs, newest first: summaries, one page at a time.")
async def list_runs(
    serving: ServingDep,
    pipeline: str | None = Query(None, max_length=200),
    status: Literal["succeeded", "failed"] | None = None,
    limit: int = Query(50, ge=1, le=paging.MAX_PAGE, description="Runs per page."),
    cursor: str | None = Query(None, max_length=512, description="`next_cursor` of the previous page."),
) -> RunPage:
    """Summaries carry no inputs, outputs or explanation (`GET /v1/runs/{id}` has them), so a page
    costs the same whatever the runs stored."""
    rows = await serving.run_summaries(pipeline, status, limit + 1, paging.run_position(cursor))
    page, more = rows[:limit], len(rows) > limit
    next_cursor = paging.encode([page[-1]["started_at"], page[-1]["run_id"]]) if more else None
    runs = [
        RunSummary.model_validate({**r, "started_at": r["started_at"].isoformat() if r["started_at"] else None})
        for r in page
    ]
    return RunPage(runs=runs, next_cursor=next_cursor)


@router.get(
    "/{run_id}", operation_id="get_run", summary="One recorded run: inputs, outputs, versions used, explanation, trace."
)
async def get_run(run_id: str, serving: ServingDep) -> RunDetail:
    """A unique prefix of 4+ characters of the id is enough."""
    return RunDetail.model_validate(await serving.get_run(run_id))
