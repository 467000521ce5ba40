"""Request limits enforced while the body is read: size, decompressed size, JSON depth, UTF-8.

A pure ASGI middleware, not a FastAPI dependency: FastAPI reads and parses a JSON body (and
pydantic validates it) *before* any dependency of the route runs, so a dependency would come too
late to stop a 100 MB body, a gzip bomb or a 200,000-deep array from reaching the parser. The
middleware wraps `receive`: it counts bytes as they arrive (413 as soon as a limit is crossed,
with or without `Content-Length`, chunked or not), inflates `Content-Encoding: gzip|deflate`
incrementally, and checks the complete body (UTF-8, nesting depth, lone surrogate escapes)
before handing it on, decoded, as one message. Messages after the body (`http.disconnect`) pass
through untouched, so disconnect handling and streaming responses work as before.

Limits come from `Settings.limits` per operation id (`workbench/config.py`, docs/api.md).
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
import time
from collections.abc import Iterable
from re import Pattern
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench.config import LimitsSettings, ResolvedLimits

from .body_checks import BodyError, Inflater, check_json, check_utf8
from .errors import ApiError, error_response

TRIM_AFTER_BYTES = 16 * 1024 * 1024
DRAIN_SECONDS = 5.0
DRAIN_IDLE_SECONDS = 0.5
DRAIN_BYTES = 64 * 1024 * 1024
# Bodies (or chunks) bigger than this are inflated and checked in a worker thread: the event loop only moves bytes.
OFFLOAD_BYTES = 256 * 1024
_ENCODINGS = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}
_TEXT_TYPES = ("text/", "application/yaml", "application/x-yaml")
# KServe's binary-data extension (`Inference-Header-Content-Length`) is part of these operations only
# (api/routes/kserve.py); on any other endpoint the header means nothing and the whole body is checked.
BINARY_INFER_OPERATIONS = frozenset({"v2_model_infer", "v2_model_version_infer"})
ROUTE_CACHE_SIZE = 1024
ROUTE_CACHE_PATH = 512
_UNSEEN = object()


class RequestLimitsMiddleware:
    """Enforce `limits` on every HTTP request body (see module docstring)."""

    def __init__(self, app: ASGIApp, limits: LimitsSettings, routers: Iterable[Any]) -> None:
        self.app = app
        self.limits = limits
        self.endpoints = endpoint_table(routers)
        self.budget = _Budget(limits.max_inflight_body_bytes)
        # per (method, path): the route (a scan of every route's regex, ~40 of them, per request
        # before); per operation: its limits (a pydantic model built per request before)
        self._routes: dict[tuple[str, str], APIRoute | None] = {}
        self._limits: dict[str | None, ResolvedLimits] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path", "").endswith("\n"):
            # `%0A` at the end: Starlette's route regexes end in `$`, which also matches before a final
            # newline, so `/v1/pipelines/x/predict\n` would reach the predict route; no route has it
            await _drain(receive)
            request = Request(scope)
            err = ApiError(404, f"no route {request.method} {request.url.path}")
            await error_response(request, err)(scope, receive, send)
            return
        route = self._route(scope)
        operation = None if route is None else route.operation_id or route.name
        limits = self._limits.get(operation)
        if limits is None:
            limits = self._limits[operation] = self.limits.for_endpoint(operation)
        headers = _headers(scope)
        held = _Held(self.budget)
        try:
            await self._handle(scope, receive, send, route, operation, limits, headers, held)
        finally:
            if held.release() >= TRIM_AFTER_BYTES:  # the body is freed once the route has answered
                await asyncio.to_thread(_trim_heap)

    def _route(self, scope: Scope) -> APIRoute | None:
        """`_route(scope, self.endpoints)`, remembered for up to `ROUTE_CACHE_SIZE` method and path
        pairs of at most `ROUTE_CACHE_PATH` characters (paths are the client's: the memory stays bounded)."""
        key = (scope.get("method", ""), scope.get("path", ""))
        route = self._routes.get(key, _UNSEEN)
        if route is not _UNSEEN:
            return route
        route = _route(scope, self.endpoints)
        if len(key[1]) <= ROUTE_CACHE_PATH:
            if len(self._routes) >= ROUTE_CACHE_SIZE:
                self._routes.clear()
            self._routes[key] = route
        return route

    async def _handle(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        route: APIRoute | None,
        operation: str | None,
        limits: ResolvedLimits,
        headers: dict[str, str],
        held: _Held,
    ) -> None:
        try:
            _check_media_type(route, headers)
            body = await _read_body(receive, headers, limits, operation, held)
            if body is None:  # the client went away while sending
                return
            if len(body) > OFFLOAD_BYTES:
                await asyncio.to_thread(_check_content, body, headers, limits, operation)
            else:
                _check_content(body, headers, limits, operation)
        except BodyError as exc:
            if route is not None:  # the request matched this route: HttpMetricsMiddleware labels the refusal by it
                scope["route"] = route
            request = Request(scope)
            code = {413: "payload_too_large", 415: "unsupported_media_type"}.get(exc.status)
            err = ApiError(exc.status, exc.message, code=code, param=exc.param, retry_after_s=exc.retry_after_s)
            if exc.pending:
                await _drain(receive)
            await error_response(request, err)(scope, receive, send)
            return
        if "content-encoding" in headers:
            # in place, not on a copy: what the layers below write into the scope (`route`, read by
            # HttpMetricsMiddleware for its label) must reach the layers above
            scope["headers"] = [
                (k, v) for k, v in scope["headers"] if k.lower() not in (b"content-encoding", b"content-length")
            ] + [(b"content-length", str(len(body)).encode())]
        await self.app(scope, _replay(body, receive), send)


async def _drain(receive: Receive) -> None:
    """Read and drop what is left of a refused body before answering, while it keeps coming (at
    most DRAIN_SECONDS, DRAIN_BYTES, and DRAIN_IDLE_SECONDS between chunks), as nginx's lingering
    close does: a client that writes its whole body before reading its answer (most HTTP
    libraries) then gets the 413 instead of a reset connection. The server answers only after the
    response is complete in uvicorn, and a client that stops sending is answered after the idle time.
    Nothing read here is kept."""
    deadline = time.monotonic() + DRAIN_SECONDS
    left = DRAIN_BYTES
    while left > 0:
        remaining = min(deadline - time.monotonic(), DRAIN_IDLE_SECONDS)
        if remaining <= 0:
            return
        try:
            message = await asyncio.wait_for(receive(), remaining)
        except TimeoutError:
            return
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
        left -= len(message.get("body", b""))


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class _Budget:
    """Bytes of request bodies held at once by all requests (read, inflated, not yet answered)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.lock = threading.Lock()  # inflating threads take from it too


class _Held:
    """What one request holds of the budget; `take` raises BodyError 503 when the budget is spent."""

    def __init__(self, budget: _Budget) -> None:
        self.budget = budget
        self.bytes = 0

    def take(self, n: int) -> None:
        if n <= 0:
            return
        with self.budget.lock:
            if self.budget.used + n > self.budget.limit:
                err = BodyError(
                    503,
                    f"the server holds {self.budget.used} bytes of request bodies, its limit "
                    f"(WORKBENCH_LIMITS__MAX_INFLIGHT_BODY_BYTES={self.budget.limit}); retry shortly",
                )
                err.retry_after_s = 1.0
                raise err
            self.budget.used += n
            self.bytes += n

    def release(self) -> int:
        """Give the bytes back to the budget; returns how many."""
        with self.budget.lock:
            self.budget.used -= self.bytes
            held, self.bytes = self.bytes, 0
        return held


def _trim_heap() -> None:
    """Give freed heap memory back to the system after a large body (glibc keeps what worker
    threads freed in their arenas otherwise, so the resident size would stay at its peak)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _load_libc() -> Any:
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:  # not glibc
        return None


_LIBC = _load_libc()


async def _read_body(
    receive: Receive, headers: dict[str, str], limits: ResolvedLimits, operation: str | None, held: _Held
) -> bytes | None:
    """The whole body, inflated; None if the client disconnected. Raises BodyError, with `pending`
    True when the client may still be sending the rest of the body."""
    state = {"finished": False}
    try:
        return await _read_body_inner(receive, headers, limits, operation, state, held)
    except BodyError as exc:
        exc.pending = not state["finished"]
        raise


async def _read_body_inner(
    receive: Receive,
    headers: dict[str, str],
    limits: ResolvedLimits,
    operation: str | None,
    state: dict[str, bool],
    held: _Held,
) -> bytes | None:
    """The whole body, inflated; None if the client disconnected. Raises BodyError."""
    state["finished"] = False
    where = f" for {operation}" if operation else ""
    declared = headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise BodyError(400, f"Content-Length {declared!r} is not a number of bytes", param="header.content-length")
        if int(declared) > limits.max_body_bytes:
            raise BodyError(
                413,
                f"body of {declared} bytes exceeds the limit of {limits.max_body_bytes} bytes{where} "
                f"({_setting('max_body_bytes', operation)})",
            )
    encoding = headers.get("content-encoding", "identity").strip().lower()
    inflater: Inflater | None = None
    if encoding not in ("", "identity"):
        if encoding not in _ENCODINGS:
            raise BodyError(
                415, f"Content-Encoding {encoding!r} is not supported; send gzip, deflate or identity", "header"
            )
        inflater = Inflater(
            _ENCODINGS[encoding],
            limits.max_decompressed_bytes,
            _setting("max_decompressed_bytes", operation),
            take=held.take,
        )
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        state["finished"] = not message.get("more_body", False)  # known before this chunk can fail
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise BodyError(
                413,
                f"body exceeds the limit of {limits.max_body_bytes} bytes{where} "
                f"({_setting('max_body_bytes', operation)})",
            )
        if inflater is not None:
            await asyncio.to_thread(inflater.feed, chunk)  # CPU work; takes from the budget as it grows
        else:
            held.take(len(chunk))
            parts.append(chunk)
        if state["finished"]:
            break
    return await asyncio.to_thread(inflater.finish) if inflater is not None else b"".join(parts)


def _check_content(body: bytes, headers: dict[str, str], limits: ResolvedLimits, operation: str | None) -> None:
    """UTF-8, depth and surrogates of JSON bodies (and of the JSON header of a binary KServe body,
    on the /v2 infer operations only: `BINARY_INFER_OPERATIONS`)."""
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    depth_setting = "WORKBENCH_LIMITS__MAX_JSON_DEPTH"
    head = headers.get("inference-header-content-length") if operation in BINARY_INFER_OPERATIONS else None
    if head is not None:  # KServe binary-data extension (any Content-Type): a JSON header, then raw bytes
        if head.isdigit() and int(head) <= len(body):
            check_json(body[: int(head)], limits.max_json_depth, depth_setting)
        return
    if _json_type(ctype):
        if body:
            check_json(body, limits.max_json_depth, depth_setting)
    elif ctype.startswith(_TEXT_TYPES):
        check_utf8(body)


def _json_type(ctype: str) -> bool:
    return ctype in ("", "application/json") or ctype.endswith("+json")


def _check_media_type(route: APIRoute | None, headers: dict[str, str]) -> None:
    """415 for a route whose body is a JSON document (a pydantic body parameter) sent with another
    Content-Type (`text/plain`, `application/xml`, a form): FastAPI would read it as a JSON string and
    answer 422. No Content-Type is taken as JSON. Routes that read their own body (`PUT /v1/kb/{name}`
    takes text, KServe `/infer` octet-stream) have no body parameter and check their own type."""
    if route is None or route.body_field is None:
        return
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if not _json_type(ctype):
        err = BodyError(415, f"Content-Type {ctype!r} is not supported here; send application/json", "header")
        err.pending = True  # the body is not read: drain it before answering
        raise err


def _setting(field: str, operation: str | None) -> str:
    name = f"WORKBENCH_LIMITS__{field.upper()}"
    return f"{name}, or per endpoint WORKBENCH_LIMITS__ENDPOINTS" + (f' {{"{operation}": ...}}' if operation else "")


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; of a repeated header the FIRST value, as Starlette's
    `Request.headers[...]` (so FastAPI) and the predict fast path read it."""
    out: dict[str, str] = {}
    for k, v in scope.get("headers") or []:
        out.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
    return out


def _route(scope: Scope, endpoints: list[tuple[Pattern[str], frozenset[str], APIRoute]]) -> APIRoute | None:
    """The API route this request will reach (None for no route)."""
    path, method = scope.get("path", ""), scope.get("method", "")
    for regex, methods, route in endpoints:
        if method in methods and regex.match(path):
            return route
    return None


def endpoint_table(routers: Iterable[Any]) -> list[tuple[Pattern[str], frozenset[str], APIRoute]]:
    """(path regex, methods, route) of every API route of `routers` (FastAPI `APIRouter`s)."""
    return [
        (r.path_regex, frozenset(r.methods or ()), r)
        for router in routers
        for r in router.routes
        if isinstance(r, APIRoute)
    ]
