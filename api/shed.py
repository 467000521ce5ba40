"""Load shedding at the front door: a predict request that its pipeline's admission queue would
refuse is answered 429 (with Retry-After) before routing, body parsing, validation or dependencies
run, so that refusing costs the event loop a fraction of what serving costs (under 3x overload two
requests in three are refused, and each full trip through FastAPI took loop time that admitted
requests were waiting for). The route still admits for real (`Serving.predict`): this check takes
no slot, it only answers early what the route would answer.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import ApiError, error_response

# the predict route's path (its {name} is `[^/]+`); `\Z`, not `$`, which matches before a final newline
PREDICT_PATH = re.compile(r"^/v1/pipelines/([^/]+)/predict\Z")
_ROUTE = SimpleNamespace(path="/v1/pipelines/{name}/predict")  # the label HttpMetricsMiddleware reads


class ShedMiddleware:
    """Answer 429 `queue_full` for `POST /v1/pipelines/{name}/predict` when `serving`'s admission
    queue would refuse one more request of that pipeline (`AdmissionQueue.refusal`)."""

    def __init__(self, app: ASGIApp, serving: Any) -> None:
        self.app = app
        self.serving = serving

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            m = PREDICT_PATH.match(scope["path"])
            queue = getattr(self.serving, "_admission_queue", None)  # made by the first predict
            if m is not None and queue is not None:
                refused = queue.refusal(m.group(1))
                if refused is not None:
                    await _drain(receive)  # the body is read (and dropped) so the connection stays usable
                    scope["route"] = _ROUTE
                    err = ApiError(429, refused.message, code="queue_full", retry_after_s=refused.retry_after_s)
                    await error_response(Request(scope), err)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


async def _drain(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
