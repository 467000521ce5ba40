"""Cancel work when the HTTP client goes away.

Streaming responses are cancelled by Starlette itself (it listens for `http.disconnect` while
streaming). For a non-streaming request the handler is still computing when the client leaves;
`cancel_on_disconnect` races the work against the disconnect so that the work is cancelled (and
a generation aborted, its KV-cache blocks freed) instead of running to completion for nobody.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from fastapi import Request, Response
from fastapi.responses import JSONResponse

T = TypeVar("T")

CLIENT_CLOSED_REQUEST = 499  # nginx's status for "the client closed the connection before the answer"


def client_gone(*, json_body: bool = False) -> Response:
    """The answer to a request whose client left first: status 499 (nginx's "client closed request").
    No client reads it; uvicorn's access log and the HTTP metrics do. `json_body`: `{}` as JSON, what the
    `/v1` routes send (their answers are JSON documents); else an empty body (`/v2` and OpenAI routes)."""
    if json_body:
        return JSONResponse({}, status_code=CLIENT_CLOSED_REQUEST)
    return Response(status_code=CLIENT_CLOSED_REQUEST)


class ClientGone(Exception):
    """The client disconnected before the response was ready (nothing is sent)."""


async def _wait_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def cancel_on_disconnect(request: Request, work: Awaitable[T]) -> T:
    """Await `work` in the calling task; if the client disconnects first, cancel it and raise ClientGone.

    The work runs in the caller's task (no task of its own): a watcher task cancels the caller
    when `http.disconnect` arrives, and the cancellation is turned into ClientGone here. One task
    and one `asyncio.wait` fewer per request than racing two tasks (half the loop time of this call,
    measured). A cancellation from elsewhere (a deadline, shutdown) propagates unchanged."""
    task = asyncio.current_task()
    assert task is not None, "cancel_on_disconnect runs inside a task"
    gone = False

    async def watch() -> None:
        nonlocal gone
        await _wait_disconnect(request)
        gone = True
        task.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        return await work
    except asyncio.CancelledError:
        if gone:
            task.uncancel()  # the cancellation was ours: it ends here, as ClientGone
            raise ClientGone() from None
        raise
    finally:
        watcher.cancel()
