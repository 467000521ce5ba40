"""Cancel work when the HTTP client goes away.

Streaming responses are cancelled by Starlette itself (it listens for `http.disconnect` while
streaming). For a non-streaming request the handler is still computing when the client leaves;
`cancel_on_disconnect` races the work against the disconnect so that the work is cancelled (and
a generation aborted, its KV-cache blocks freed) instead of running to completion for nobody.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from fastapi import Request

T = TypeVar("T")


class ClientGone(Exception):
    """The client disconnected before the response was ready (nothing is sent)."""


async def _wait_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def cancel_on_disconnect(request: Request, work: Awaitable[T]) -> T:
    """Await `work`; if the client disconnects first, cancel it and raise ClientGone."""
    task: asyncio.Task[Any] = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_wait_disconnect(request))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            return task.result()
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass
        raise ClientGone()
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
