"""Model inference in the Open Inference Protocol (KServe v2) REST shape: `/v2/...`.

Server: `GET /v2`, `/v2/health/live`, `/v2/health/ready`. Model: `GET /v2/models/{m}[/versions/{v}]`,
`.../ready`, `POST .../infer` with JSON tensors or the binary-data extension (`api/kserve_codec.py`).
Errors are `{"error": "..."}` with a 4xx status (429/503 with `Retry-After` when the model's queue
is full or the server is not ready). Request `parameters` the server does not know are ignored,
as the protocol says. Readiness is 200 (true) or 400 (false) with an empty body.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from fastapi import APIRouter, Request, Response

from workbench import __version__
from workbench.serving import ServedModel

from ..deps import PREDICT_KEY, ServingDep
from ..disconnect import ClientGone, cancel_on_disconnect, client_gone
from ..errors import V2_ERRORS, ApiError, KServeError
from ..kserve_codec import TensorCodecError, decode_request, encode_response, v2_datatype
from ..schemas.kserve import InferenceResponse, ModelMetadata, RepositoryModel, ServerMetadata

router = APIRouter(prefix="/v2", tags=["inference (KServe v2)"], responses=V2_ERRORS)

EXTENSIONS = ["binary_tensor_data", "generate"]


# Readiness answers with a status and an empty body, as the protocol says.
_READY_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "Ready (empty body)."},
    400: {"description": "Not ready (empty body)."},
}


@router.get("", operation_id="v2_server_metadata", summary="Server metadata: name, version, extensions.")
async def server_metadata() -> ServerMetadata:
    return ServerMetadata(name="workbench", version=__version__, extensions=EXTENSIONS)


@router.get(
    "/health/live",
    operation_id="v2_server_live",
    summary="Server liveness (200 while the process runs).",
    response_class=Response,
    responses={200: {"description": "Live (empty body)."}},
)
async def server_live() -> Response:  # empty body, status only
    return Response(status_code=200)


@router.get(
    "/health/ready",
    operation_id="v2_server_ready",
    summary="Server readiness: 200 once models are loaded, else 503.",
    response_class=Response,
    responses={200: {"description": "Ready (empty body)."}, 503: {"description": "Not ready (empty body)."}},
)
async def server_ready(serving: ServingDep) -> Response:
    return Response(status_code=200 if serving.ready else 503, headers={} if serving.ready else {"Retry-After": "1"})


@router.post(
    "/repository/index",
    operation_id="v2_repository_index",
    summary="Every model and version with its state (Triton's model-repository index).",
)
async def repository_index(serving: ServingDep) -> list[RepositoryModel]:
    """`[{"name", "version", "state": "READY"|"UNAVAILABLE", "reason"}]`; any JSON body is ignored."""
    return [RepositoryModel.model_validate(m) for m in serving.model_index()]


@router.get("/models/{model}", operation_id="v2_model_metadata", summary="Model metadata (latest version).")
async def model_metadata(model: str, serving: ServingDep) -> ModelMetadata:
    return _metadata(serving.model(model), serving.model_versions(model))


@router.get(
    "/models/{model}/versions/{version}",
    operation_id="v2_model_version_metadata",
    summary="Model metadata of one version.",
)
async def model_version_metadata(model: str, version: str, serving: ServingDep) -> ModelMetadata:
    return _metadata(serving.model(model, version), serving.model_versions(model))


@router.get(
    "/models/{model}/ready",
    operation_id="v2_model_ready",
    summary="Model readiness: 200 ready, 400 not ready.",
    response_class=Response,
    responses=_READY_RESPONSES,
)
async def model_ready(model: str, serving: ServingDep) -> Response:
    return Response(status_code=200 if serving.model_ready(model) else 400)


@router.get(
    "/models/{model}/versions/{version}/ready",
    operation_id="v2_model_version_ready",
    summary="Readiness of one model version.",
    response_class=Response,
    responses=_READY_RESPONSES,
)
async def model_version_ready(model: str, version: str, serving: ServingDep) -> Response:
    return Response(status_code=200 if serving.model_ready(model, version) else 400)


_INFER_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "description": "KServe v2 inference request (JSON tensors)."}
            },
            "application/octet-stream": {
                "schema": {
                    "type": "string",
                    "format": "binary",
                    "description": "Binary-data extension: JSON header (Inference-Header-Content-Length bytes), "
                    "then raw tensors.",
                }
            },
        },
    },
}
_INFER_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "model": InferenceResponse,
        "description": "Outputs as JSON, or (binary-data extension) a JSON header then raw tensors.",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    },
    413: {"model": KServeError, "description": "Body or its inflated size over the limit (docs/api.md)."},
}


@router.post(
    "/models/{model}/infer",
    operation_id="v2_model_infer",
    summary="Inference on the latest version.",
    dependencies=[PREDICT_KEY],
    openapi_extra=_INFER_DOC,
    responses=_INFER_RESPONSES,
)
async def infer(model: str, request: Request, serving: ServingDep) -> Response:
    return await _infer(model, None, request, serving)


@router.post(
    "/models/{model}/versions/{version}/infer",
    operation_id="v2_model_version_infer",
    summary="Inference on one version.",
    dependencies=[PREDICT_KEY],
    openapi_extra=_INFER_DOC,
    responses=_INFER_RESPONSES,
)
async def infer_version(model: str, version: str, request: Request, serving: ServingDep) -> Response:
    return await _infer(model, version, request, serving)


async def _infer(model: str, version: str | None, request: Request, serving: ServingDep) -> Response:
    served = serving.model(model, version)
    body = await request.body()
    try:  # parsing (JSON tensors of megabytes, gzip) is CPU work: off the event loop
        decoded = await asyncio.to_thread(
            decode_request,
            body,
            request.headers.get("inference-header-content-length"),
            request.headers.get("content-encoding"),
        )
    except TensorCodecError as exc:
        raise ApiError(400, str(exc)) from None
    known = {t.name: t for t in served.outputs}
    if decoded.outputs is not None:
        unknown = [o.name for o in decoded.outputs if o.name not in known]
        if unknown:
            raise ApiError(400, f"model {model!r}: unknown requested output {unknown[0]!r}; outputs are {list(known)}")
    for t in served.inputs:
        sent = decoded.input_datatypes.get(t.name)
        want = v2_datatype(t.dtype)
        if sent is not None and sent != want and not _compatible(sent, want):
            raise ApiError(400, f"model {model!r}, input {t.name!r}: datatype {sent}; expected {want} {list(t.shape)}")
    timeout_s = _timeout_s(decoded.parameters)
    try:  # a client that leaves (or times out) takes its queued rows with it: they never reach the model
        result = await cancel_on_disconnect(request, serving.infer(model, version, decoded.inputs, timeout_s=timeout_s))
    except ClientGone:
        return client_gone()
    names = [o.name for o in decoded.outputs] if decoded.outputs is not None else list(known)
    outputs = {n: result.outputs[n] for n in names}
    try:
        payload, headers = encode_response(
            result.model.name, result.model.version, decoded, outputs, {n: v2_datatype(known[n].dtype) for n in names}
        )
    except TensorCodecError as exc:
        raise ApiError(400, str(exc)) from None
    return Response(payload, status_code=200, headers=headers, media_type=headers.pop("Content-Type"))


def _compatible(sent: str, want: str) -> bool:
    # integer widths and float widths convert losslessly-or-checked in the signature validation
    ints = {"INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64"}
    floats = {"FP16", "FP32", "FP64", "BF16"}
    return (sent in ints and want in ints) or (sent in floats and want in floats)


def _timeout_s(params: dict[str, object]) -> float | None:
    """Triton's request parameter `timeout` (microseconds) in seconds; None when absent, not a number or not > 0
    (ignored, as Triton does). Raises ApiError 400 for a number too large for a float (`1e400` reads as
    infinity)."""
    value = params.get("timeout")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        try:
            micros = float(value)  # an integer of 309 digits or more does not fit
        except OverflowError:
            micros = math.inf
        if not math.isfinite(micros):
            raise ApiError(400, f"parameters.timeout: must be a finite number of microseconds, got {str(value)[:40]}")
        return micros / 1e6
    return None


def _metadata(m: ServedModel, versions: list[str]) -> ModelMetadata:
    return ModelMetadata.model_validate(
        {
            "name": m.name,
            "versions": versions,
            "platform": m.platform,
            "inputs": [{"name": t.name, "datatype": v2_datatype(t.dtype), "shape": list(t.shape)} for t in m.inputs],
            "outputs": [{"name": t.name, "datatype": v2_datatype(t.dtype), "shape": list(t.shape)} for t in m.outputs],
            "parameters": {"task": m.task, "max_batch_size": m.max_batch_size},
        }
    )
