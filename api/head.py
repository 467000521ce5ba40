"""`HEAD` answered like `GET` without a body (RFC 9110 section 9.3.2), for every GET route:
load balancers and Kubernetes probes check `/healthz`, `/readyz` and `/metrics` with either method.

FastAPI's routes declare GET only (Starlette's plain routes add HEAD, `APIRoute` does not), so
without this a `HEAD` is a 405. The request goes down as a GET (the same status, headers and
`Content-Length`); the body messages are emptied on the way out.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGetMiddleware:
    """Serve `HEAD` requests by the GET route of the path, dropping the response body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        sent_end = False

        async def send_head(message: Message) -> None:
            nonlocal sent_end
            if message["type"] == "http.response.body":
                if sent_end:
                    return
                sent_end = True  # one empty, final body message however many the GET would send
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, send_head)
