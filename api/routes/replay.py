"""Replay of a recorded run with edited knowledge bases: `POST /v1/runs/{run_id}/replay`."""

from __future__ import annotations

from fastapi import APIRouter

from workbench.pipeline.replay import changes_table, recorded_knowledge_base
from workbench.serving.errors import call

from ..deps import PREDICT_KEY, ServingDep
from ..errors import V1_ERRORS
from ..schemas.tools import ReplayRequest, ReplayResponse, RunKnowledgeBaseSource
from .tools_common import workbench_of

router = APIRouter(prefix="/v1/runs", tags=["runs"], responses=V1_ERRORS)


@router.post(
    "/{run_id}/replay",
    operation_id="replay_run",
    summary="Re-run a recorded run, optionally with edited knowledge bases; returns what changed.",
    dependencies=[PREDICT_KEY],
    response_model=ReplayResponse,
)
async def replay_run(run_id: str, body: ReplayRequest, serving: ServingDep) -> ReplayResponse:
    """The run's pipeline version and inputs run again; knowledge bases named in `knowledge_bases`
    are replaced by the given rule text for this replay only (the files are not changed). Rule text
    that does not validate answers 422 with its located errors; a name the pipeline does not use
    answers 404. The replay is recorded with `replay_of` set."""
    wb = workbench_of(serving)
    result = await call(wb.replay_sync, run_id, knowledge_bases=dict(body.knowledge_bases))
    data = result.to_dict()
    return ReplayResponse(**data, table=changes_table(data["changes"]))


@router.get(
    "/{run_id}/knowledge-bases/{name}",
    operation_id="get_run_knowledge_base",
    summary="The rules of a knowledge base as a recorded run used them (where a replay edit starts).",
    response_model=RunKnowledgeBaseSource,
)
async def run_knowledge_base(run_id: str, name: str, serving: ServingDep) -> RunKnowledgeBaseSource:
    """`recorded` is False when that version is no longer stored (`text` is then the current rules);
    404 for an unknown run or a knowledge base the run did not use."""
    wb = workbench_of(serving)
    return RunKnowledgeBaseSource(**await call(recorded_knowledge_base, wb, run_id, name))
