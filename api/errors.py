"""One JSON error shape for the API, and the exception handlers that produce it.

`/v1` (pipelines, knowledge bases, runs, OpenAI-compatible generation) answers every error as

    {"error": {"code": "<machine-readable>", "message": "<for people>", "type": "<class>",
               "param": "<field path or null>", "details": [...], "request_id": "<id>"}}

which is also the shape the OpenAI clients parse (`error.message`, `error.code`, `error.param`).
`/v2` (Open Inference Protocol, KServe v2) answers `{"error": "<message>"}` as that protocol says.
No handler ever sends a stack trace: unexpected exceptions are logged with an id and the client
receives `internal_error` with that id.

Codes (HTTP status): `invalid_request` (400), `unauthorized` (401), `not_found` (404),
`method_not_allowed` (405), `conflict` (409), `validation_failed` (422: a body or document that
is well-formed JSON but wrong; `details` lists each problem with its field path or line/column),
`queue_full` (429, `Retry-After`), `payload_too_large` (413), `internal_error` (500),
`unavailable` (503, `Retry-After`), `timeout` (504).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import re
import uuid
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from workbench import serving as sv

log = logging.getLogger("api.errors")

_STATUS_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_failed",
    429: "queue_full",
    500: "internal_error",
    503: "unavailable",
    504: "timeout",
}


class ApiError(Exception):
    """An error answered to the client in the documented shape.

    Args:
        status: HTTP status code.
        code: machine-readable code (see module docstring); defaults from `status`.
        message: one sentence for people, naming the thing at fault.
        param: the field path at fault (`body.inputs[0].text`), if one.
        details: a list of problems, each a dict (`loc`/`msg`, or `file`/`line`/`column`/`message`).
        retry_after_s: adds a `Retry-After` header (whole seconds, rounded up, at least 1).
        headers: extra response headers.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        details: list[dict[str, Any]] | None = None,
        retry_after_s: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or _STATUS_CODES.get(status, "error")
        self.message = message
        self.param = param
        self.details = details or []
        self.headers = dict(headers or {})
        if retry_after_s is not None:
            self.headers["Retry-After"] = str(max(1, math.ceil(retry_after_s)))


def not_found(kind: str, name: str, known: list[str] | None = None) -> ApiError:
    """404 `not_found` naming the kind of thing and (when short) the names that exist."""
    msg = f"no {kind} named {name!r}"
    if known is not None:
        shown = ", ".join(sorted(known)[:20]) or "(none)"
        msg += f"; known: {shown}"
    return ApiError(404, msg, code="not_found", param=kind)


def is_kserve(request: Request) -> bool:
    """True for Open Inference Protocol paths (`/v2...`), which use `{"error": "..."}`."""
    path = request.url.path
    return path == "/v2" or path.startswith("/v2/")


def error_response(request: Request, err: ApiError) -> JSONResponse:
    """Render `err` in the shape of the request's protocol (/v2: KServe; otherwise /v1).

    Text that came from the client (a field name, a YAML key) may hold lone surrogates, which
    UTF-8 cannot encode: they are written as `\\udXXX` escapes, so rendering an error never fails."""
    prefixes = _server_prefixes(request)
    if is_kserve(request):
        message = _hide_paths(_encodable(err.message), prefixes)
        return JSONResponse({"error": message}, status_code=err.status, headers=err.headers)
    body: dict[str, Any] = {
        "code": err.code,
        "message": _hide_paths(_encodable(err.message), prefixes),
        "type": _type_of(err.status),
        "param": _encodable(err.param),
        "details": _hide_paths(_encodable(err.details), prefixes),
        "request_id": request_id(request),
    }
    # set here too: unexpected errors are answered outside RequestIdMiddleware
    return JSONResponse(
        {"error": body}, status_code=err.status, headers={**err.headers, "X-Request-Id": body["request_id"]}
    )


def _encodable(value: Any) -> Any:
    """`value` with every string made UTF-8-encodable (lone surrogates -> backslash escapes).
    Error details are at most a few levels deep (lists of flat dicts)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encodable(v) for v in value]
    return value


def _server_prefixes(request: Request) -> list[str]:
    """The server's own absolute folders (`dir/`), longest first: the knowledge-base and pipeline
    folders and the working directory. Error messages name files relative to them."""
    settings = getattr(getattr(request, "app", None), "state", None)
    settings = getattr(settings, "settings", None)
    folders = (getattr(settings, "knowledge_base_dir", None), getattr(settings, "pipeline_dir", None), os.getcwd())
    return list(_resolved_prefixes(tuple(None if f is None else str(f) for f in folders)))


@functools.lru_cache(maxsize=64)
def _resolved_prefixes(folders: tuple[str | None, ...]) -> tuple[str, ...]:
    """`_server_prefixes` of these folders, each resolved once: resolving walks the file system
    (`lstat` per path component) and every error answer, the 429s of an overload included, needs
    them on the event loop (8% of its time in an overload run, py-spy)."""
    out: set[str] = set()
    for folder in folders:
        if folder is None:
            continue
        p = Path(folder)
        for form in (p, p.resolve()) if p.is_absolute() else (p.resolve(),):
            text = str(form).rstrip("/")
            if text:
                out.add(text + "/")
    return tuple(sorted(out, key=len, reverse=True))


def _hide_paths(value: Any, prefixes: list[str]) -> Any:
    """`value` with the server's absolute folders cut from its strings (docs/api.md: absolute paths
    are never exposed): `/srv/wb/knowledge_bases/x.clp` -> `x.clp`, `/srv/wb/FAMILY` -> `FAMILY`."""
    if isinstance(value, str):
        for prefix in prefixes:
            if prefix in value:
                value = value.replace(prefix, "")
        return value
    if isinstance(value, dict):
        return {k: _hide_paths(v, prefixes) for k, v in value.items()}
    if isinstance(value, list):
        return [_hide_paths(v, prefixes) for v in value]
    return value


def request_id(request: Request) -> str:
    """The request's id (set by `RequestIdMiddleware`: the client's `X-Request-Id` or a new one)."""
    rid = getattr(request.state, "request_id", None)
    if rid is None:
        rid = uuid.uuid4().hex
        request.state.request_id = rid
    return rid


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """Render a pydantic `loc` as a path: `("body", "inputs", 0, "text")` -> `body.inputs[0].text`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def in_body_terms(param: str | None, message: str, body_field: str) -> tuple[str | None, str]:
    """A refused run input in the terms of the client's body.

    `param` is the serving layer's: a JSON path in the run input (`$.pixels[3]`) when the input is at
    fault (other params are returned unchanged, e.g. `classify.inputs.pixels`, a pipeline node's
    field); `body_field` is where the body holds that input (`body.input`, `body.inputs[2]`).
    Returns `(param, message)`: `body.input.pixels[3]` and the message naming it first
    (`body.input.pixels[3]: 99 is greater than the maximum of 16 (input node 'image')`).
    """
    if not param or not param.startswith("$"):
        return param, message
    path = body_field + param[1:]
    sent = "input" + param[1:]  # how the workbench's message names the field (`InputValidationError`)
    return path, (path + message[len(sent) :] if message.startswith(sent) else f"{path}: {message}")


def _type_of(status: int) -> str:
    if status == 401:
        return "authentication_error"
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


async def _api_error_handler(request: Request, exc: ApiError) -> JSONResponse:
    return error_response(request, exc)


# The field path a message about a request's facts starts with: `facts[0]`, `facts[1].slots.of[1]`.
_FACT_PATH = re.compile(r"(facts\[\d+\](?:\.[A-Za-z_][\w-]*|\[\d+\])*): ")


def from_serving(request: Request, exc: sv.ServingError) -> ApiError:
    """Map a serving-layer error to its HTTP status and code."""
    kserve = is_kserve(request)
    if isinstance(exc, sv.NotFoundError):
        return ApiError(404, exc.message, code="not_found", param=exc.param)
    if isinstance(exc, sv.OverloadedError):
        return ApiError(429, exc.message, code="queue_full", retry_after_s=exc.retry_after_s)
    if isinstance(exc, sv.UnavailableError):
        return ApiError(503, exc.message, code="unavailable", retry_after_s=exc.retry_after_s)
    if isinstance(exc, sv.DeadlineError):
        return ApiError(504, exc.message, code="timeout")
    if isinstance(exc, sv.AmbiguousIdError):
        return ApiError(409, exc.message, code="ambiguous_id", param=exc.param, details=exc.details)
    if isinstance(exc, sv.ConflictError):
        return ApiError(409, exc.message, code="conflict", param=exc.param)
    if isinstance(exc, sv.LimitExceededError):
        return ApiError(422, exc.message, code="limit_exceeded", param=exc.param)
    if isinstance(exc, sv.InvalidDocumentError):
        return ApiError(422, exc.message, code="validation_failed", param=exc.param, details=exc.details)
    if isinstance(exc, sv.BadInputError):
        if kserve:
            return ApiError(400, exc.message, code="invalid_request", param=exc.param)
        param, message = exc.param, exc.message
        m = _FACT_PATH.match(message) if param is None else None
        if m is not None:  # a knowledge-base run's fact (`facts[1].slots.of[1]: ...`): name it in body terms
            param, message = "body." + m.group(1), "body." + message
        return ApiError(422, message, code="validation_failed", param=param, details=exc.details)
    if isinstance(exc, sv.ExecutionError):
        return ApiError(500, exc.message, code="execution_failed", param=exc.param, details=exc.details)
    return ApiError(500, exc.message, code="internal_error")


async def _serving_handler(request: Request, exc: sv.ServingError) -> JSONResponse:
    return error_response(request, from_serving(request, exc))


def validation_details(exc: RequestValidationError) -> list[dict[str, str]]:
    """`[{"loc", "msg", "type"}]` for a request validation error: field paths as `body.a[0].b`, and a
    body that is not JSON reported by line and column with the parser's reason."""
    details = []
    for e in exc.errors():
        loc, msg = e.get("loc", ()), e.get("msg", "")
        if e.get("type") == "json_invalid" and len(loc) == 2 and isinstance(loc[1], int):
            # FastAPI reports the character offset as a list index ("body[22]"); say line and column.
            doc = exc.body if isinstance(exc.body, str) else ""
            line = doc.count("\n", 0, loc[1]) + 1
            col = loc[1] - (doc.rfind("\n", 0, loc[1]) + 1) + 1
            reason = (e.get("ctx") or {}).get("error") or msg
            loc, msg = ("body",), f"not valid JSON at line {line}, column {col}: {reason}"
        elif e.get("type") == "finite_number":  # NaN, Infinity, 1e400 (parsed as inf)
            msg = "must be a finite number"
        elif e.get("type") == "float_type" and isinstance(e.get("input"), bool):
            msg = "must be a number, not a boolean"
        elif e.get("type") in ("literal_error", "enum"):
            # pydantic quotes the choices as Python strings ('a' or 'b'): a JSON client reads "a" or "b"
            msg = re.sub(r"'((?:[^'\\]|\\.)*)'", lambda m: json.dumps(m.group(1)), msg)
        msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")  # pydantic's wrapping
        details.append({"loc": field_path(loc), "msg": msg, "type": e.get("type", "")})
    return details


def validation_message(details: list[dict[str, str]]) -> tuple[str, str]:
    """`(message, param)`: the first problem, and how many more there are."""
    first = details[0] if details else {"loc": "body", "msg": "invalid request"}
    message = f"{first['loc']}: {first['msg']}"
    if len(details) > 1:
        message += f" (and {len(details) - 1} more problem{'s' if len(details) > 2 else ''})"
    return message, first["loc"]


async def _validation_handler(request: Request, exc: RequestValidationError) -> JSONResponse:
    details = validation_details(exc)
    message, param = validation_message(details)
    if is_kserve(request):  # the Open Inference Protocol answers a bad request 400 (n16: /v2 generate said 422)
        return error_response(request, ApiError(400, message, code="invalid_request", param=param, details=details))
    return error_response(request, ApiError(422, message, code="validation_failed", param=param, details=details))


async def _http_handler(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    status = exc.status_code
    if status == 404:
        message = f"no route {request.method} {request.url.path}"
    elif status == 405:
        message = f"method {request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    headers = dict(exc.headers or {})
    if status == 405:
        headers["Allow"] = allowed_methods(request)
    return error_response(request, ApiError(status, message, headers=headers))


def allowed_methods(request: Request) -> str:
    """The `Allow` header of a 405 (RFC 9110 section 15.5.6): every method some route of the app fully matches
    on the request's path (Starlette's `BaseRoute.matches`), HEAD wherever GET is (`api.head`). Starlette names
    only the first partly matching route's (`DELETE /v1/kb/NAME` answered `allow: GET` where PUT is served too)."""
    from starlette.routing import Match

    order = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
    scope = {k: v for k, v in request.scope.items() if k not in ("endpoint", "path_params", "route")}
    allowed = [
        m
        for m in order
        if any(route.matches({**scope, "method": m})[0] == Match.FULL for route in request.app.router.routes)
    ]
    if "GET" in allowed and "HEAD" not in allowed:
        allowed.insert(allowed.index("GET") + 1, "HEAD")
    return ", ".join(allowed)


async def _unhandled_handler(request: Request, exc: Exception) -> JSONResponse:
    rid = request_id(request)
    log.exception("unhandled error on %s %s (request id %s)", request.method, request.url.path, rid, exc_info=exc)
    return error_response(
        request,
        ApiError(500, f"internal error (request id {rid}); the server log has the details", code="internal_error"),
    )


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that turn every error into the documented shape."""
    app.add_exception_handler(ApiError, _api_error_handler)  # type: ignore[arg-type]
    app.add_exception_handler(sv.ServingError, _serving_handler)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_handler)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_handler)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unhandled_handler)


class ErrorBody(BaseModel):
    """The body of every `/v1` error (documented in OpenAPI as `ErrorResponse.error`)."""

    code: str = Field(description="Machine-readable code, e.g. not_found, validation_failed, queue_full.")
    message: str = Field(description="What went wrong, naming the thing at fault.")
    type: str = Field(
        description="OpenAI-style class: invalid_request_error, authentication_error, rate_limit_error, server_error."
    )
    param: str | None = Field(None, description="Field path at fault, e.g. body.inputs[0].text.")
    details: list[dict[str, Any]] = Field(
        default_factory=list, description="Each problem: {loc, msg, type} or {file, line, column, message}."
    )
    request_id: str = Field(
        description="Id of the request (X-Request-Id if the client sent one); quoted in the server log."
    )


class ErrorResponse(BaseModel):
    """`{"error": {...}}`: the one error shape of `/v1`."""

    error: ErrorBody


class KServeError(BaseModel):
    """`{"error": "..."}`: the Open Inference Protocol's error shape (`/v2`)."""

    error: str


def _responses(model: type[BaseModel], codes: dict[int, str]) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": model, "description": text} for status, text in codes.items()}


_COMMON = {
    404: "Unknown name (`not_found`).",
    413: "Body, or its inflated size, over the endpoint's limit (`payload_too_large`; docs/api.md, Limits).",
    422: "Invalid body or document: `details` gives each field path or line/column (`validation_failed`).",
    429: "Queue full, nothing was admitted; retry after `Retry-After` seconds (`queue_full`).",
    503: "Not ready or shutting down; retry after `Retry-After` seconds (`unavailable`).",
}
V1_ERRORS = _responses(
    ErrorResponse,
    {
        400: "Body not UTF-8, or JSON nested deeper than the limit (`invalid_request`).",
        401: "Missing or wrong bearer key (`unauthorized`).",
        **_COMMON,
    },
)
# no 422 on /v2: the Open Inference Protocol answers every bad request 400 (`_validation_handler`)
V2_ERRORS = _responses(
    KServeError,
    {400: "Bad request (unknown input, wrong shape or datatype).", **{k: v for k, v in _COMMON.items() if k != 422}},
)

# Operations that may answer 429: they admit work into a bounded queue (a pipeline's runs, a model's
# batcher, a generation engine, the consultations table). No other operation can.
QUEUED_OPERATIONS = frozenset(
    {
        "predict",
        "replay_run",
        "ask_knowledge_base",
        "start_consultation",
        "answer_consultation",
        "create_completion",
        "create_chat_completion",
        "v2_model_infer",
        "v2_model_version_infer",
        "v2_generate",
        "v2_generate_stream",
    }
)


def document_only_possible_errors(routes: Any) -> None:
    """Drop from each route's documented answers the shared error statuses it cannot return:
    422 where there is neither a body nor a parameter to validate, 429 outside `QUEUED_OPERATIONS`.
    Idempotent (the routers are module-level and may be mounted by several apps)."""
    from fastapi.routing import APIRoute

    def can_fail(field: Any) -> bool:  # a plain `str` path parameter accepts every value
        info = field.field_info
        return bool(info.metadata) or info.annotation is not str

    def has_params(dependant: Any) -> bool:  # its own query and path parameters, or a dependency's
        own = [*dependant.query_params, *dependant.path_params]
        return any(map(can_fail, own)) or any(map(has_params, dependant.dependencies))

    for route in routes:
        if not isinstance(route, APIRoute):
            continue
        has_body = route.body_field is not None or bool((route.openapi_extra or {}).get("requestBody"))
        if not has_body and not has_params(route.dependant):
            route.responses.pop(422, None)
        if route.operation_id not in QUEUED_OPERATIONS:
            route.responses.pop(429, None)
