"""The 499 answer (the client left first) comes from one helper, `api.disconnect.client_gone`, with the
bytes every route sent when each wrote it inline: `/v1` routes `{}` as JSON, `/v2` and OpenAI routes an
empty body. Pinned as the ASGI messages the response sends."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from api.disconnect import client_gone

ROUTES = Path(__file__).resolve().parents[2] / "api" / "routes"


def _sent(response) -> list[dict]:
    messages: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        messages.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "query_string": b""}
    asyncio.run(response(scope, receive, send))
    return messages


@pytest.mark.parametrize(
    ("json_body", "headers", "body"),
    [
        (True, [(b"content-length", b"2"), (b"content-type", b"application/json")], b"{}"),
        (False, [(b"content-length", b"0")], b""),
    ],
)
def test_client_gone_sends_the_bytes_of_before(json_body, headers, body) -> None:
    start, content = _sent(client_gone(json_body=json_body))
    assert start == {"type": "http.response.start", "status": 499, "headers": headers}
    assert content == {"type": "http.response.body", "body": body}


def test_no_route_writes_its_own_499() -> None:
    inline = [
        f"{f.name}:{n}"
        for f in sorted(ROUTES.glob("*.py"))
        for n, line in enumerate(f.read_text().splitlines(), 1)
        if re.search(r"status_code\s*=\s*499", line)
    ]
    assert inline == [], inline
