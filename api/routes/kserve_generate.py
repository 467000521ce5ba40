"""Triton's generate extension for served causal LMs: `POST /v2/models/{m}/generate` and
`/generate_stream` (server-sent events, one `data: {...}` per step with the new text).

Body: `{"text_input": "...", "parameters": {"max_tokens": 16, "temperature": 0, ...}}`; the
parameters are `neural.generation.SamplingParams` fields (max_tokens, min_tokens, temperature,
top_p, top_k, seed, stop, stop_token_ids, ignore_eos, include_stop_str_in_output); any other is
refused by name. Errors use the `/v2` shape `{"error": "..."}`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..deps import PREDICT_KEY, ServingDep
from ..disconnect import ClientGone, cancel_on_disconnect, client_gone
from ..documents import sse_content
from ..errors import V2_ERRORS

router = APIRouter(prefix="/v2", tags=["inference (KServe v2)"], responses=V2_ERRORS)


class GenerateParameters(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_tokens: Annotated[int, Field(ge=1)] = 16
    min_tokens: Annotated[int, Field(ge=0)] = 0
    temperature: Annotated[float, Field(ge=0.0)] = 1.0
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    top_k: Annotated[int, Field(ge=-1)] = 0
    seed: int | None = None
    stop: list[str] = Field(default_factory=list)
    stop_token_ids: list[Annotated[int, Field(ge=0)]] = Field(default_factory=list)
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False


class GenerateRequest(BaseModel):
    """Triton generate extension request."""

    model_config = ConfigDict(extra="forbid")

    text_input: str = Field(description="The prompt.")
    id: str | None = Field(None, description="Request id (echoed).")
    parameters: GenerateParameters = Field(default_factory=GenerateParameters)


class GenerateResponse(BaseModel):
    """The whole generation (or, streamed, one step's new text in `text_output`)."""

    model_name: str
    model_version: str
    id: str | None = None
    text_output: str
    finish_reason: str | None = None
    completion_tokens: int = 0


def _version(serving: Any, name: str) -> str:
    catalog = getattr(serving.workbench, "catalog", None)
    entry = catalog.loaded.get(name) if catalog is not None else None
    return entry.short_version if entry is not None else "1"


@router.post(
    "/models/{model_name}/generate",
    operation_id="v2_generate",
    summary="Generate text with a served causal LM (Triton generate extension).",
    dependencies=[PREDICT_KEY],
    response_model=GenerateResponse,
)
async def generate(model_name: str, body: GenerateRequest, request: Request, serving: ServingDep) -> Any:
    rid = f"v2gen-{uuid.uuid4().hex}"
    stream = serving.generate(model_name, body.text_input, body.parameters.model_dump(), rid)

    async def last() -> Any:
        final = None
        async for d in stream:
            final = d
        return final

    try:
        final = await cancel_on_disconnect(request, last())
    except ClientGone:
        return client_gone()
    finally:
        await stream.aclose()
    return GenerateResponse(
        model_name=model_name,
        model_version=_version(serving, model_name),
        id=body.id,
        text_output=final.text,
        finish_reason=final.finish_reason,
        completion_tokens=final.completion_tokens,
    )


@router.post(
    "/models/{model_name}/generate_stream",
    operation_id="v2_generate_stream",
    summary="Stream a generation as server-sent events (Triton generate extension).",
    dependencies=[PREDICT_KEY],
    response_model=GenerateResponse,
    responses={
        200: {"description": "Server-sent events", "content": sse_content("`data: {GenerateResponse}` per step.")}
    },
)
async def generate_stream(model_name: str, body: GenerateRequest, serving: ServingDep) -> Response:
    rid = f"v2gen-{uuid.uuid4().hex}"
    stream = serving.generate(model_name, body.text_input, body.parameters.model_dump(), rid)
    first = await stream.__anext__()  # errors (unknown model, bad prompt) answer before the 200
    version = _version(serving, model_name)

    async def events() -> AsyncIterator[bytes]:
        try:
            d = first
            while True:
                if d.delta_text or d.finished:
                    doc = GenerateResponse(
                        model_name=model_name,
                        model_version=version,
                        id=body.id,
                        text_output=d.delta_text,
                        finish_reason=d.finish_reason,
                        completion_tokens=d.completion_tokens,
                    )
                    yield b"data: " + json.dumps(doc.model_dump(), ensure_ascii=False).encode() + b"\n\n"
                if d.finished:
                    return
                d = await stream.__anext__()
        finally:
            await stream.aclose()

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
