"""Middleware in Ray Serve's HTTP proxy: each request's run named before it reaches a replica, and a
request whose replica was lost retried on another one (or answered 503), never lost silently.

Ray Serve's proxy answers a request whose replica died mid-request (killed, crashed, its node gone)
with an empty 500. With this middleware the proxy instead:

- gives every request a run id (`x-workbench-run-id`) and an attempt number (`x-workbench-attempt`),
  signed with the Serve instance's token (`x-workbench-proxy`); the `pipelines` replica records the run
  under that id (`workbench.scale.ingress`), and on a later attempt answers a run the lost replica had
  already committed as stored, so nothing is recorded twice;
- keeps the request body (up to `MAX_BUFFERED_BYTES`), and when the replica ended the request without
  an answer, sends it again (Serve routes it to a live replica) up to `WORKBENCH_RAY_PROXY_RETRIES`
  times (default 2) for predictions (`POST .../predict`, recorded idempotently by run id) and GET/HEAD;
- otherwise answers `503` in the API's error shape, naming the lost replica, with `Retry-After`;
- sends a complete body inside the request itself (`scope[BODY_SCOPE_KEY]`, pickled with the request that
  Serve sends to a replica), which the replica reads instead of the proxy's body stream
  (`workbench.scale.ingress.RunIdMiddleware`). Serve's proxy streams a body to the replica through a
  per-request queue that the replica drains by calling back into the proxy; when the replica Serve chose
  dies after draining it but before its acceptance reaches the proxy, Serve's router sends the request to
  another replica itself, whose body stream is then empty: without the copy in the request, that
  replica waited for the body until the client gave up (seen in tests/scale as a predict that hung for the
  client's whole timeout after `ray.kill`; docs/scaling.md).

A client that leaves ends the request: it is not retried for nobody.

It is installed by `deploy` through Serve's `RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH`
(`workbench.scale.proxy:middlewares`) and `WORKBENCH_RAY_PROXY_TOKEN` in the Serve controller's
environment, which the proxies inherit. Without the token it installs nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import uuid
from typing import Any

log = logging.getLogger("workbench.scale")

TOKEN_ENV = "WORKBENCH_RAY_PROXY_TOKEN"
RETRIES_ENV = "WORKBENCH_RAY_PROXY_RETRIES"
CALLBACK = "workbench.scale.proxy:middlewares"
MAX_BUFFERED_BYTES = 64 * 2**20
_OURS = (b"x-workbench-run-id", b"x-workbench-attempt", b"x-workbench-proxy")
# ASGI scope key of a request's complete body (bytes) inside the request sent to the replica; a scope is
# built by the proxy, so a client cannot set it
BODY_SCOPE_KEY = "workbench.body"


def middlewares() -> list[Any]:
    """Serve's HTTP proxy callback: `[Middleware(LostReplicaRetry)]` when the token is set, else `[]`."""
    from starlette.middleware import Middleware

    token = os.environ.get(TOKEN_ENV)
    if not token:
        return []
    return [Middleware(LostReplicaRetry, token=token, retries=int(os.environ.get(RETRIES_ENV, "2")))]


class LostReplicaRetry:
    """Pure ASGI middleware (see the module docstring). `retries`: further attempts after a lost replica."""

    def __init__(self, app: Any, token: str, retries: int = 2) -> None:
        self.app = app
        self.token = token.encode()
        self.retries = retries

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        body: list[dict[str, Any]] = []
        size, complete = 0, False
        while size <= MAX_BUFFERED_BYTES:
            msg = await receive()
            body.append(msg)
            if msg["type"] != "http.request":
                return  # the client left before its request was read
            size += len(msg.get("body", b""))
            if not msg.get("more_body"):
                complete = True
                break
        method, path = scope.get("method", ""), scope.get("path", "")
        retryable = complete and (method in ("GET", "HEAD") or (method == "POST" and path.endswith("/predict")))
        run_id = str(uuid.uuid4()).encode()
        headers = [(k, v) for k, v in scope.get("headers") or () if k not in _OURS]
        request_id = next((v for k, v in headers if k == b"x-request-id"), None)
        if request_id is None:  # one id for every attempt (Serve's own middleware keeps a given one)
            request_id = uuid.uuid4().hex.encode()
            headers.append((b"x-request-id", request_id))
        inline = b"".join(m.get("body", b"") for m in body) if complete else None
        client = _Client(receive)
        for attempt in range(1 + (self.retries if retryable else 0)):
            sub = dict(scope)
            sub["headers"] = [
                *headers,
                (b"x-workbench-run-id", run_id),
                (b"x-workbench-attempt", str(attempt).encode()),
                (b"x-workbench-proxy", self.token),
            ]
            if inline is not None:
                sub[BODY_SCOPE_KEY] = inline
            if await self._attempt(sub, list(body), client, send):
                return
            if client.left:
                log.info("%s %s: the client left before an answer (attempt %d)", method, path, attempt + 1)
                return
            log.warning("%s %s: the replica was lost before it answered (attempt %d)", method, path, attempt + 1)
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
        await _unavailable(send, method, path, retryable, self.retries, request_id.decode("latin-1"))

    async def _attempt(self, scope: dict[str, Any], pending: list[dict[str, Any]], client: _Client, send: Any) -> bool:
        """One pass through Serve's proxy with the buffered body replayed first; True when it answered."""
        answered = False

        async def replay() -> dict[str, Any]:
            return pending.pop(0) if pending else await client.receive()

        async def watch(message: dict[str, Any]) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
            await send(message)

        await self.app(scope, replay, watch)
        return answered


class _Client:
    """The client's `receive` past the buffered body; `left` once it said `http.disconnect`."""

    __slots__ = ("_receive", "left")

    def __init__(self, receive: Any) -> None:
        self._receive = receive
        self.left = False

    async def receive(self) -> dict[str, Any]:
        msg = await self._receive()
        if msg["type"] == "http.disconnect":
            self.left = True
        return msg


def unavailable_doc(message: str, request_id: str | None) -> dict[str, Any]:
    """The API's error document (api/errors.py's shape) for a request no replica answered: code
    `unavailable`, type `server_error`; used by this middleware and by the HAProxy ingress's errorfile."""
    return {
        "error": {
            "code": "unavailable",
            "message": message,
            "type": "server_error",
            "param": None,
            "details": [],
            "request_id": request_id,
        }
    }


async def _unavailable(send: Any, method: str, path: str, retried: bool, retries: int, request_id: str) -> None:
    """503 in the API's error shape (`/v2`: `{"error": "..."}`)."""
    if retried:
        why = f"the replica serving it was lost and {retries} retr{'y' if retries == 1 else 'ies'} failed"
        tail = "nothing of it was recorded twice, retry later"
    else:
        why = "the replica serving it was lost before it answered"
        tail = "it may or may not have taken effect (not retried: it is not a prediction)"
    message = f"{method} {path}: {why}; {tail}"
    doc = {"error": message} if "/v2/" in path or path.endswith("/v2") else unavailable_doc(message, request_id)
    data = json.dumps(doc).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"retry-after", b"1"),
                (b"x-request-id", request_id.encode("latin-1")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
