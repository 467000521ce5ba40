"""OpenAI-compatible generation: `GET /v1/models` (and `/v1/models/{id}`), `POST /v1/completions`,
`POST /v1/chat/completions`.

Requests go to the generation engine (continuous batching over a paged KV cache). With
`stream: true` the response is server-sent events, one `data: {chunk}` per engine step that
produced text, ending with `data: [DONE]`. A client that disconnects (streaming or not)
cancels its request and its KV-cache blocks are freed in the engine's next step. Errors use the
`/v1` error shape, which the OpenAI client libraries parse. With `rails` naming a knowledge
base, its rules act as input rails (block or rewrite the prompt) and output rails (stop the
generation or rewrite a delta); see docs/api.md.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute

from workbench.serving import BadInputError, DeadlineError, GenerationDelta, Serving

from ..deps import PREDICT_KEY, ServingDep
from ..disconnect import ClientGone, cancel_on_disconnect, client_gone
from ..documents import sse_content
from ..errors import V1_ERRORS, ApiError, not_found, validation_details, validation_message
from ..schemas.openai import (
    ChatCompletion,
    ChatCompletionRequest,
    Completion,
    CompletionRequest,
    ModelCard,
    ModelList,
)


class OpenAIRoute(APIRoute):
    """Bad requests answer 400 `invalid_request` (as OpenAI and vLLM do), not 422; an unknown field
    is named in the message."""

    def get_route_handler(self) -> Any:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                raise _bad_request(exc) from None
            except BadInputError as exc:
                raise ApiError(400, exc.message, code="invalid_request", param=exc.param, details=exc.details) from None

        return route


def _bad_request(exc: RequestValidationError) -> ApiError:
    details = validation_details(exc)
    for d in details:
        if d["type"] == "extra_forbidden":
            d["msg"] = f"unknown parameter {d['loc'].rsplit('.', 1)[-1]!r}: this server does not support it"
    message, param = validation_message(details)
    return ApiError(400, message, code="invalid_request", param=param, details=details)


router = APIRouter(prefix="/v1", tags=["generation (OpenAI-compatible)"], responses=V1_ERRORS, route_class=OpenAIRoute)


@router.get(
    "/models",
    operation_id="list_generation_models",
    summary="Served language models (OpenAI `models.list`).",
    response_model=ModelList,
)
async def list_models(serving: ServingDep) -> dict[str, Any]:
    serving.require_ready()
    created = int(time.time())
    return {"object": "list", "data": [_model_card(m, created) for m in serving.generation_models()]}


@router.get(
    "/models/{model:path}",
    operation_id="retrieve_generation_model",
    summary="One served language model (OpenAI `models.retrieve`); 404 `not_found` naming the served ones.",
    response_model=ModelCard,
)
async def retrieve_model(model: str, serving: ServingDep) -> dict[str, Any]:
    serving.require_ready()
    served = serving.generation_models()
    for m in served:
        if m["name"] == model:
            return _model_card(m, int(time.time()))
    raise not_found("model", model, [m["name"] for m in served])


def _model_card(m: dict[str, Any], created: int) -> dict[str, Any]:
    return {
        "id": m["name"],
        "object": "model",
        "created": created,
        "owned_by": "workbench",
        "max_model_len": m["max_model_len"],
    }


@router.post(
    "/completions",
    operation_id="create_completion",
    summary="Text completion (streaming with `stream: true`).",
    dependencies=[PREDICT_KEY],
    responses={
        200: {
            "model": Completion,
            "description": "The completion (or server-sent events when streaming).",
            "content": sse_content("`stream: true`: `data: {completion chunk}` per step, then `data: [DONE]`."),
        }
    },
)
async def create_completion(body: CompletionRequest, request: Request, serving: ServingDep) -> Response:
    rid = f"cmpl-{uuid.uuid4().hex}"
    prompts = body.prompts()
    params = body.sampling()

    async def open_all() -> list[_Opened]:
        streams: list[_Opened] = []
        try:
            for i, p in enumerate(prompts):
                streams.append(await _open(serving, body.model, p, params, f"{rid}-{i}", body.rails))
        except BaseException:
            for s in streams:  # one refused prompt: abort the ones already admitted (frees their KV blocks)
                await s.rest.aclose()  # type: ignore[attr-defined]
            raise
        return streams

    try:  # a client that leaves while its requests wait in the engine's queue takes them with it
        streams = await cancel_on_disconnect(request, open_all())
    except ClientGone:
        return client_gone()
    created = int(time.time())

    def chunk(index: int, d: GenerationDelta) -> dict[str, Any]:
        return {
            "id": rid,
            "object": "text_completion",
            "created": created,
            "model": body.model,
            "choices": [{"index": index, "text": d.delta_text, "logprobs": None, "finish_reason": d.finish_reason}],
        }

    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return _sse(
            _merge(streams),
            chunk,
            lambda usage: {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": body.model,
                "choices": [],
                "usage": usage,
            },
            include_usage,
        )
    try:
        finals = await cancel_on_disconnect(request, _collect(streams))
    except ClientGone:
        return client_gone()
    usage = _usage(finals)
    choices = [
        {"index": i, "text": f.text, "logprobs": None, "finish_reason": f.finish_reason} for i, f in enumerate(finals)
    ]
    return JSONResponse(
        {
            "id": rid,
            "object": "text_completion",
            "created": created,
            "model": body.model,
            "choices": choices,
            "usage": usage,
        }
    )


@router.post(
    "/chat/completions",
    operation_id="create_chat_completion",
    summary="Chat completion with the model's chat template (streaming with `stream: true`).",
    dependencies=[PREDICT_KEY],
    responses={
        200: {
            "model": ChatCompletion,
            "description": "The reply (or server-sent events when streaming).",
            "content": sse_content("`stream: true`: `data: {chat completion chunk}` per step, then `data: [DONE]`."),
        }
    },
)
async def create_chat_completion(body: ChatCompletionRequest, request: Request, serving: ServingDep) -> Response:
    rid = f"chatcmpl-{uuid.uuid4().hex}"
    messages = [{"role": m.role, "content": m.text()} for m in body.messages]
    prompt = await asyncio.to_thread(serving.chat_prompt, body.model, messages)
    try:  # a client that leaves while its request waits in the engine's queue takes it with it
        stream = await cancel_on_disconnect(
            request, _open(serving, body.model, prompt, body.sampling(), rid, body.rails)
        )
    except ClientGone:
        return client_gone()
    created = int(time.time())

    def chunk(index: int, d: GenerationDelta, first: bool = False) -> dict[str, Any]:
        delta: dict[str, Any] = (
            {"role": "assistant", "content": d.delta_text}
            if first
            else ({"content": d.delta_text} if d.delta_text else {})
        )
        return {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": body.model,
            "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": d.finish_reason}],
        }

    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return _sse(
            _merge([stream]),
            chunk,
            lambda usage: {
                "id": rid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.model,
                "choices": [],
                "usage": usage,
            },
            include_usage,
            first_has_role=True,
        )
    try:
        [final] = await cancel_on_disconnect(request, _collect([stream]))
    except ClientGone:
        return client_gone()
    return JSONResponse(
        {
            "id": rid,
            "object": "chat.completion",
            "created": created,
            "model": body.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": final.text},
                    "logprobs": None,
                    "finish_reason": final.finish_reason,
                }
            ],
            "usage": _usage([final]),
        }
    )


# ---- helpers -------------------------------------------------------------------------------------
class _Opened:
    """A generation whose first delta has been produced (so request errors surface as HTTP errors)."""

    def __init__(self, first: GenerationDelta, rest: AsyncIterator[GenerationDelta]) -> None:
        self.first = first
        self.rest = rest

    async def deltas(self) -> AsyncIterator[GenerationDelta]:
        try:
            yield self.first
            if not self.first.finished:
                async for d in self.rest:
                    yield d
        finally:
            await self.rest.aclose()  # type: ignore[attr-defined]


async def _open(
    serving: Serving, model: str, prompt: str | list[int], params: dict[str, Any], rid: str, rails: str | None
) -> _Opened:
    gen = (
        serving.generate_with_rails(model, prompt, params, rid, rails)
        if rails
        else serving.generate(model, prompt, params, rid)
    )
    timeout_s = serving.settings.serving.generation_queue_timeout_s
    try:  # the first delta comes after the prefill: waiting longer than the queue deadline aborts it
        first = await asyncio.wait_for(gen.__anext__(), timeout_s)
    except TimeoutError:
        await gen.aclose()  # aborts the request in the engine (removed from its queue)
        raise DeadlineError(
            f"model {model!r}: request {rid} waited more than {timeout_s:g} s (serving.generation_queue_timeout_s) "
            "for its first step; it was aborted"
        ) from None
    except BaseException:
        await gen.aclose()
        raise
    return _Opened(first, gen)


async def _collect(streams: list[_Opened]) -> list[GenerationDelta]:
    async def last(s: _Opened) -> GenerationDelta:
        final = s.first
        async for d in s.deltas():
            final = d
        return final

    tasks = [asyncio.ensure_future(last(s)) for s in streams]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for t in tasks:
            t.cancel()


async def _merge(streams: list[_Opened]) -> AsyncIterator[tuple[int, GenerationDelta]]:
    """Interleave several generations' deltas as they come, tagged with their choice index."""
    if len(streams) == 1:
        async for d in streams[0].deltas():
            yield 0, d
        return
    queue: asyncio.Queue[tuple[int, GenerationDelta | BaseException | None]] = asyncio.Queue()

    async def pump(i: int, s: _Opened) -> None:
        try:
            async for d in s.deltas():
                await queue.put((i, d))
        except Exception as exc:
            await queue.put((i, exc))
        await queue.put((i, None))

    tasks = [asyncio.ensure_future(pump(i, s)) for i, s in enumerate(streams)]
    try:
        left = len(tasks)
        while left:
            i, item = await queue.get()
            if item is None:
                left -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield i, item
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _usage(finals: list[GenerationDelta]) -> dict[str, int]:
    prompt = sum(f.prompt_tokens for f in finals)
    completion = sum(f.completion_tokens for f in finals)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _sse(
    deltas: AsyncIterator[tuple[int, GenerationDelta]],
    chunk: Any,
    usage_chunk: Any,
    include_usage: bool,
    first_has_role: bool = False,
) -> StreamingResponse:
    async def events() -> AsyncIterator[bytes]:
        finals: dict[int, GenerationDelta] = {}
        seen: set[int] = set()
        try:
            async for i, d in deltas:
                first = i not in seen
                seen.add(i)
                if d.finished:
                    finals[i] = d
                if not (d.delta_text or d.finished or (first and first_has_role)):
                    continue
                body = chunk(i, d, True) if (first and first_has_role) else chunk(i, d)
                if include_usage:  # OpenAI: every chunk but the last carries "usage": null
                    body["usage"] = None
                yield b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"
            if include_usage:
                yield b"data: " + json.dumps(usage_chunk(_usage(list(finals.values())))).encode() + b"\n\n"
        except Exception as exc:  # after the 200 header: report in-band, never a stack trace
            from workbench.serving import ServingError

            message = exc.message if isinstance(exc, ServingError) else "internal error during generation"
            yield (
                b"data: "
                + json.dumps(
                    {"error": {"code": "generation_failed", "message": message, "type": "server_error", "param": None}}
                ).encode()
                + b"\n\n"
            )
        yield b"data: [DONE]\n\n"

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )
