"""Read a text document (pipeline YAML, rule text) from a JSON body or a raw text body."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from pydantic import BaseModel, ValidationError

from .errors import ApiError, field_path

TEXT_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "text/plain", "text/x-clips")


async def read_document(request: Request, model: type[BaseModel], text_field: str) -> BaseModel:
    """Parse the body as `model` (JSON), or wrap a raw text body as `{text_field: body}`.

    Raises ApiError 415 (other content types), 422 (JSON that does not fit `model`, with field
    paths). Size, inflated size, depth and UTF-8 were checked while the body was read (`api/limits.py`).
    """
    body = await request.body()
    ctype = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    data: Any
    if ctype in TEXT_TYPES:
        try:
            data = {text_field: body.decode("utf-8")}
        except UnicodeDecodeError:
            raise ApiError(422, "body: not UTF-8 text", code="validation_failed", param="body") from None
    elif ctype in ("application/json", ""):
        try:
            data = json.loads(body or b"null")
        except json.JSONDecodeError as exc:
            raise ApiError(
                422,
                f"body: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
                code="validation_failed",
                param="body",
            ) from None
    else:
        raise ApiError(415, f"Content-Type {ctype!r}: send application/json or one of {', '.join(TEXT_TYPES)}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        details = [{"loc": field_path(("body", *e["loc"])), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        first = details[0]
        raise ApiError(
            422, f"{first['loc']}: {first['msg']}", code="validation_failed", param=first["loc"], details=details
        ) from None


def document_body_doc(model: type[BaseModel], text_types: tuple[str, ...] = TEXT_TYPES) -> dict[str, Any]:
    """OpenAPI `requestBody` for a route that takes `model` as JSON or the document as raw text."""
    content: dict[str, Any] = {"application/json": {"schema": model.model_json_schema()}}
    for t in text_types[:1] + ("text/plain",):
        content[t] = {"schema": {"type": "string"}}
    return {"requestBody": {"required": True, "content": content}}


def sse_content(events: str) -> dict[str, Any]:
    """OpenAPI `content` of an answer streamed as server-sent events (`text/event-stream`), beside
    the JSON answer of the same status: `events` says what the stream carries."""
    return {"text/event-stream": {"schema": {"type": "string", "description": events}}}
