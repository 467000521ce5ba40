"""The predict route's fast path: `POST /v1/pipelines/{name}/predict` with one JSON `input`, answered
without FastAPI's router, dependency solver and exception middlewares (pure ASGI).

Measured (docs/serving.md, "Cut the work per request"): with the run itself stubbed out, FastAPI's
routing (a regex per route until one matches), its dependency solving (path, query, body, the key
check, the serving handle) and its exception layers were most of the HTTP side's CPU per predict.

The fast path answers only the plain case, and exactly as the route would: a JSON body (the
`Content-Type` is `application/json`) that parses and validates as `PredictRequest` in one pass
(pydantic-core; what it refuses, the route parses its own way, `json.loads`) with one `input`, no
`stream`, no query string, a valid pipeline name, no `root_path`. Anything else (a batch, a stream,
`?explain=true`, a body that does not parse or validate, a bad name) goes to the route unchanged,
with the body handed on as it was read, so every error keeps FastAPI's shape. The run is answered by
the route's own code (`predict_one`); the key check is the route's dependency (`api/auth.py`);
errors go to the app's own exception handlers, looked up the way Starlette's exception middleware
looks them up; an error with no handler propagates to the server-error middleware as from the route.
It sits below the request-id, metrics, shedding and limits middlewares, so the body it reads has
passed the limits.
"""

from __future__ import annotations

from typing import Any

from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench.names import InvalidNameError, check_name

from .auth import require_predict_key
from .routes.pipelines import predict_one
from .schemas.pipelines import PredictRequest
from .shed import PREDICT_PATH


class PredictFastPath:
    """Answer plain single-input predicts directly (see the module docstring); `answered` counts them.

    Args:
        app: the rest of the middleware stack (FastAPI's router below it).
        api: the FastAPI app: its `state` (settings, serving) and `exception_handlers` are read per request.
        route: the predict `APIRoute` (set as `scope["route"]`, as routing would: metrics label by it).
    """

    def __init__(self, app: ASGIApp, api: Any, route: APIRoute) -> None:
        self.app = app
        self.api = api
        self.route = route
        self.answered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope.get("query_string")
            or scope.get("root_path")
            or not _json_content(scope)
        ):
            await self.app(scope, receive, send)
            return
        m = PREDICT_PATH.match(scope["path"])
        if m is None:
            await self.app(scope, receive, send)
            return
        messages, complete = await _read(receive)
        body_request = _parsed(m.group(1), b"".join(x.get("body", b"") for x in messages)) if complete else None
        if body_request is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        name, predict_request = body_request
        scope["route"] = self.route
        scope["endpoint"] = self.route.endpoint
        scope["path_params"] = {"name": name}
        request = Request(scope, receive)
        try:
            await require_predict_key(request)
            serving = self.api.state.serving
            response = await predict_one(serving, name, predict_request, request, predict_request.explain)
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            response = await handler(request, exc)
            exc.__traceback__ = None  # as Starlette does: a reused exception instance would keep growing it
        self.answered += 1
        await response(scope, receive, send)

    def _handler(self, exc: Exception) -> Any:
        """The app's handler for `exc` as Starlette's ExceptionMiddleware finds it (status handlers
        for HTTP exceptions, then the class's MRO); None for what the server-error middleware handles."""
        handlers = self.api.exception_handlers
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and status in handlers and status != 500:
            return handlers[status]
        for cls in type(exc).__mro__:
            if cls is Exception:
                return None
            if cls in handlers:
                return handlers[cls]
        return None


def _json_content(scope: Scope) -> bool:
    for key, value in scope.get("headers") or ():
        if key == b"content-type" or key.lower() == b"content-type":
            return value.split(b";", 1)[0].strip().lower() == b"application/json"
    return False


async def _read(receive: Receive) -> tuple[list[Message], bool]:
    """The body's messages as received, and whether the body is complete (False when something
    else, a disconnect, came first: the route then sees the same messages)."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, False
        if not message.get("more_body", False):
            return messages, True


def _parsed(name: str, body: bytes) -> tuple[str, PredictRequest] | None:
    """(name, request) when the fast path can answer it; None hands the request to the route."""
    try:
        check_name(name, "pipeline")
    except InvalidNameError:
        return None
    try:
        # parsed and validated in one pass by pydantic-core; it takes the same JSON documents as
        # `json.loads` + `model_validate` do (the route's way) or refuses them, and a refusal goes
        # to the route (tests/api/test_predict_fast_path.py compares the two on edge cases)
        req = PredictRequest.model_validate_json(body)
    except ValidationError:
        return None
    if req.stream or req.inputs is not None:
        return None
    return name, req


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """`receive` for the route: the messages read here, in order, then the connection's own."""
    queue = list(messages)

    async def replay() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replay
