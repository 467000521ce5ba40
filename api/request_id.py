"""Request ids: the client's `X-Request-Id` (or a new one) is kept for the request and echoed.

Error bodies quote it as `request_id`, and the server log quotes it with every unexpected error,
so a client's report can be matched with the log. Pure ASGI, so streaming passes untouched.
"""

from __future__ import annotations

import re
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_SAFE = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")


class RequestIdMiddleware:
    """Put the request id in `request.state.request_id` and in the `X-Request-Id` response header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        rid = sent if _SAFE.match(sent) else uuid.uuid4().hex  # never echo arbitrary header bytes
        scope.setdefault("state", {})["request_id"] = rid

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                if not any(k.lower() == b"x-request-id" for k, _ in headers):  # error bodies set it already
                    headers.append((b"x-request-id", rid.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_id)
