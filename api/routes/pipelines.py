"""Pipelines: list, get, create or update (validated, versions kept), delete, promote, predict."""

from __future__ import annotations

from typing import Any, Literal

import pydantic_core
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse

from .. import paging
from ..deps import PREDICT_KEY, WRITE_KEY, PipelineName, ServingDep
from ..disconnect import ClientGone, cancel_on_disconnect, client_gone
from ..documents import document_body_doc, read_document, sse_content
from ..errors import V1_ERRORS, ApiError, in_body_terms
from ..run_answer import run_answer_json
from ..schemas.pipelines import PipelineDocument, PredictRequest, PromoteRequest
from ..schemas.responses import (
    PipelineDeleted,
    PipelineDetail,
    PipelinePage,
    PipelineStored,
    PipelineVersions,
    PredictBatch,
    RunOut,
    StagePromoted,
)

router = APIRouter(prefix="/v1/pipelines", tags=["pipelines"], responses=V1_ERRORS)


@router.get("", operation_id="list_pipelines", summary="Pipelines in the store and the pipeline folder.")
async def list_pipelines(
    serving: ServingDep,
    limit: int = Query(100, ge=1, le=paging.MAX_PAGE, description="Pipelines per page (by name)."),
    cursor: str | None = Query(None, max_length=512, description="`next_cursor` of the previous page."),
) -> PipelinePage:
    page, next_cursor = paging.after_name(await serving.list_pipelines(), cursor, limit)
    return PipelinePage.model_validate({"pipelines": page, "next_cursor": next_cursor})


@router.get("/{name}", operation_id="get_pipeline", summary="One pipeline: its YAML document, versions and stages.")
async def get_pipeline(
    name: PipelineName,
    serving: ServingDep,
    version: str | None = Query(
        None, max_length=64, description="A stored version (unique prefix); default: production, else latest."
    ),
) -> PipelineDetail:
    return PipelineDetail.model_validate(await serving.get_pipeline(name, version))


@router.get(
    "/{name}/versions",
    operation_id="list_pipeline_versions",
    summary="Stored versions, oldest first, with their stages.",
)
async def list_versions(name: PipelineName, serving: ServingDep) -> PipelineVersions:
    doc = await serving.get_pipeline(name)
    return PipelineVersions.model_validate({"name": name, "versions": doc["versions"], "stages": doc["stages"]})


@router.put(
    "/{name}",
    operation_id="put_pipeline",
    summary="Create or update: validate and store a new version.",
    dependencies=[WRITE_KEY],
    status_code=201,
    openapi_extra=document_body_doc(PipelineDocument),
    responses={
        200: {"model": PipelineStored, "description": "That exact version was already stored."},
        201: {"description": "A new version was stored."},
    },
)
async def put_pipeline(name: PipelineName, request: Request, response: Response, serving: ServingDep) -> PipelineStored:
    """Body: `{"document": "<yaml>", "stage": null}` as JSON, or the YAML itself
    (`Content-Type: application/yaml`). A document that does not validate is refused with 422
    and one `details` item per issue (node, field, line, column); nothing is stored."""
    body = await read_document(request, PipelineDocument, "document")
    assert isinstance(body, PipelineDocument)
    stored = PipelineStored.model_validate(await serving.put_pipeline(name, body.document, body.stage))
    response.status_code = 201 if stored.created else 200
    return stored


@router.delete(
    "/{name}",
    operation_id="delete_pipeline",
    summary="Delete every stored version (recorded runs are kept).",
    dependencies=[WRITE_KEY],
)
async def delete_pipeline(name: PipelineName, serving: ServingDep) -> PipelineDeleted:
    return PipelineDeleted(name=name, deleted_versions=await serving.delete_pipeline(name))


@router.put(
    "/{name}/stages/{stage}",
    operation_id="promote_pipeline",
    summary="Point a stage at a stored version (promote or roll back).",
    dependencies=[WRITE_KEY],
)
async def promote(
    name: PipelineName, stage: Literal["production", "staging"], body: PromoteRequest, serving: ServingDep
) -> StagePromoted:
    return StagePromoted(name=name, stage=stage, version=await serving.promote(name, body.version, stage))


@router.post(
    "/{name}/predict",
    operation_id="predict",
    summary="Run the pipeline on one input or a batch.",
    dependencies=[PREDICT_KEY],
    response_model=RunOut | PredictBatch,
    responses={
        200: {
            "description": "The run, or the results of a batch (or server-sent events with `stream: true`).",
            "content": sse_content("`stream: true`: `event: KIND` / `data: {...}` per node, text, rail and result."),
        },
        500: {"description": "The run failed inside a node (`run_failed`), recorded with its id."},
    },
)
async def predict(
    name: PipelineName,
    body: PredictRequest,
    request: Request,
    serving: ServingDep,
    explain: bool = Query(False, description="Same as `explain` in the body."),
) -> Any:
    """One input: the run (`run_id`, `status`, `outputs`, `explanation`, `timings`, versions used).
    A run that fails inside a node answers 500 `run_failed` naming the node, with the run id in
    `details` (the failed run is recorded: GET /v1/runs/{id}).

    A batch (`inputs`): `{"results": [...]}` in input order; an input that is refused (does not
    match the schema, or a model queue is full) gets `{"error": {"code", "message", "param"}}` in
    its place and the others still run.
    """
    want_explain = explain or body.explain
    if body.stream or body.inputs is not None:
        try:
            if body.stream:
                return await _stream(serving, name, body, want_explain)
            results = await cancel_on_disconnect(
                request,
                serving.predict_many(
                    name, body.inputs, version=body.version, explain=want_explain, timeout_s=body.timeout_s
                ),
            )
        except ClientGone:
            return client_gone(json_body=True)
        except ApiError:
            raise
        except Exception as exc:
            _input_error_in_body_terms(exc)
            raise
        for i, item in enumerate(results):
            err = item.get("error")
            if isinstance(err, dict) and err.get("param"):
                err["param"], err["message"] = in_body_terms(
                    err["param"], err.get("message") or "", f"body.inputs[{i}]"
                )
        # sent as JSON text like `predict_one`: non-finite outputs as "NaN"/"Infinity" strings (FastAPI writes null)
        return Response(
            PredictBatch.model_validate({"results": results}).model_dump_json(), media_type="application/json"
        )
    return await predict_one(serving, name, body, request, want_explain)


async def predict_one(serving: Any, name: str, body: PredictRequest, request: Request, explain: bool) -> Response:
    """Run `body.input` and answer it: the run as JSON (checked against `RunOut` once and sent as
    is), 499 when the client left first. Raises ApiError (500 `run_failed` for a run that failed
    inside a node) and the serving errors (a refused input's param in the body's terms), which the
    app's exception handlers answer. Shared by the route and its fast path (`api/predict_fast.py`)."""
    try:
        result = await cancel_on_disconnect(
            request,
            serving.predict(name, body.input or {}, version=body.version, explain=explain, timeout_s=body.timeout_s),
        )
    except ClientGone:
        return client_gone(json_body=True)
    except ApiError:
        raise
    except Exception as exc:
        _input_error_in_body_terms(exc)
        raise
    if result["status"] != "succeeded":
        raise ApiError(
            500,
            f"run {result['run_id']} failed: {result['error']}",
            code="run_failed",
            param=result.get("failed_node"),
            details=[{"run_id": result["run_id"], "node": result.get("failed_node"), "error": result["error"]}],
        )
    # Checked once and sent as is: returning the model would make FastAPI validate it again against
    # the declared union (RunOut | PredictBatch) before serialising it (the response model stays for OpenAPI).
    return Response(run_answer_json(result), media_type="application/json")


def _input_error_in_body_terms(exc: Exception) -> None:
    """A refused run input (`BadInputError`) names its field as the body holds it (`body.input...`)."""
    from workbench.serving import BadInputError

    if isinstance(exc, BadInputError) and exc.param:
        old = exc.param
        exc.param, exc.message = in_body_terms(exc.param, exc.message, "body.input")
        for d in exc.details:
            if d.get("loc") == old:
                d["loc"] = exc.param


async def _stream(serving: Any, name: str, body: PredictRequest, explain: bool) -> StreamingResponse:
    """Server-sent events `event: KIND` / `data: {...}` (see `Workbench.stream`); errors that happen
    before the run starts answer as usual, a failure later is an `event: error`."""
    events = serving.predict_stream(name, body.input or {}, version=body.version, explain=explain)
    first = await events.__anext__()

    async def sse() -> Any:
        try:
            event = first
            while True:
                yield f"event: {event['event']}\ndata: {_json(event)}\n\n".encode()
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    return
        except Exception as exc:  # after the 200 header: report in-band
            message = getattr(exc, "message", None) or f"{type(exc).__name__}"
            yield f"event: error\ndata: {_json({'event': 'error', 'message': message})}\n\n".encode()
        finally:
            await events.aclose()

    return StreamingResponse(sse(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def _json(doc: Any) -> str:
    """JSON text of an event: a float that is not finite as "NaN"/"Infinity"/"-Infinity" (as the answers)."""
    return pydantic_core.to_json(doc, inf_nan_mode="strings").decode()
