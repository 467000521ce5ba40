"""The Serve proxy's middleware (workbench.scale.proxy) and the replica's side of it (RunIdMiddleware), on
plain ASGI apps standing in for Serve's proxy path: a request whose replica was lost (the proxy's app ends
without answering, as Serve's does for a dead replica) is sent again under the same run id with the next
attempt number, or answered 503 in the API's error shape; a client cannot forge the run-id headers."""

from __future__ import annotations

import asyncio
import json

import pytest

from workbench.scale.proxy import LostReplicaRetry, middlewares

TOKEN = "s3cret"


async def _read_body(receive) -> bytes:
    """The whole request body, read as an ASGI app does (messages until one without `more_body`)."""
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            return body


class FlakyProxy:
    """ASGI app: loses the first `lose` requests (returns without answering), then echoes what it saw."""

    def __init__(self, lose: int) -> None:
        self.lose = lose
        self.seen: list[dict] = []

    async def __call__(self, scope, receive, send):
        body = await _read_body(receive)
        headers = dict(scope["headers"])
        self.seen.append({"headers": headers, "body": body})
        if len(self.seen) <= self.lose:
            return  # the replica died: Serve's proxy sends nothing for it
        data = json.dumps({"run_id": headers[b"x-workbench-run-id"].decode(), "body": body.decode()}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})


def _call(app, method: str, path: str, body: bytes, headers=()) -> tuple[int, dict, bytes]:
    scope = {"type": "http", "method": method, "path": path, "headers": list(headers)}
    sent: list[dict] = []
    chunks = [{"type": "http.request", "body": body[:3], "more_body": True}, {"type": "http.request", "body": body[3:]}]

    async def receive():
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def test_lost_prediction_is_retried_under_the_same_run_id():
    inner = FlakyProxy(lose=1)
    app = LostReplicaRetry(inner, token=TOKEN, retries=2)
    forged = [(b"x-workbench-run-id", b"forged"), (b"x-workbench-attempt", b"7")]
    status, _, body = _call(app, "POST", "/v1/pipelines/demo_digits/predict", b'{"input": {}}', forged)
    assert status == 200
    first, second = (s["headers"] for s in inner.seen)
    assert first[b"x-workbench-run-id"] == second[b"x-workbench-run-id"] != b"forged"
    assert (first[b"x-workbench-attempt"], second[b"x-workbench-attempt"]) == (b"0", b"1")
    assert first[b"x-workbench-proxy"] == TOKEN.encode()
    assert first[b"x-request-id"] == second[b"x-request-id"]  # one request id for every attempt
    assert [s["body"] for s in inner.seen] == [b'{"input": {}}'] * 2  # the body replayed whole
    assert json.loads(body)["run_id"] == first[b"x-workbench-run-id"].decode()


def test_prediction_lost_on_every_attempt_is_a_clear_503():
    inner = FlakyProxy(lose=10)
    status, headers, body = _call(LostReplicaRetry(inner, token=TOKEN, retries=2), "POST", "/r/v1/x/predict", b"{}")
    assert status == 503 and headers[b"retry-after"] == b"1"
    assert len(inner.seen) == 3
    err = json.loads(body)["error"]
    assert err["code"] == "unavailable" and "replica" in err["message"] and "recorded twice" in err["message"]
    assert err["request_id"] == headers[b"x-request-id"].decode()


def test_other_requests_are_not_retried_and_v2_errors_keep_their_shape():
    inner = FlakyProxy(lose=1)
    status, _, body = _call(LostReplicaRetry(inner, token=TOKEN), "PUT", "/v1/pipelines/p", b"name: p")
    assert status == 503 and len(inner.seen) == 1
    assert "may or may not" in json.loads(body)["error"]["message"]
    inner = FlakyProxy(lose=1)
    status, _, body = _call(LostReplicaRetry(inner, token=TOKEN), "POST", "/v2/models/m/infer", b"{}")
    assert status == 503 and isinstance(json.loads(body)["error"], str)


def test_no_token_no_middleware(monkeypatch):
    monkeypatch.delenv("WORKBENCH_RAY_PROXY_TOKEN", raising=False)
    assert middlewares() == []
    monkeypatch.setenv("WORKBENCH_RAY_PROXY_TOKEN", TOKEN)
    assert [m.cls for m in middlewares()] == [LostReplicaRetry]


def test_replica_trusts_run_ids_only_with_the_token():
    pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")
    from workbench.scale.ingress import REQUEST_RUN, RunIdMiddleware

    seen = []

    async def app(scope, receive, send):
        seen.append(REQUEST_RUN.get())

    def call(headers):
        asyncio.run(RunIdMiddleware(app, TOKEN)({"type": "http", "headers": headers}, None, None))
        return seen[-1]

    run = [(b"x-workbench-run-id", b"abc"), (b"x-workbench-attempt", b"1")]
    got = call([*run, (b"x-workbench-proxy", TOKEN.encode())])
    assert (got.run_id, got.attempt) == ("abc", 1)
    assert call([*run, (b"x-workbench-proxy", b"guess")]) is None  # a forged token: ignored
    assert call(run) is None


class ServeRetryAfterDrain:
    """Ray Serve's proxy path in the race seen under `ray.kill` (issue 15): the proxy pumps the client's
    body into one queue per request, which the replica drains by calling back into the proxy; the first
    replica drains it and dies before its acceptance reaches the proxy, so Serve's router sends the same
    request (same scope, same queue) to a second, live replica, whose body stream is now empty."""

    def __init__(self, replica) -> None:
        self.replica = replica

    async def __call__(self, scope, receive, send):
        queue: asyncio.Queue = asyncio.Queue()

        async def pump():
            while (msg := await receive())["type"] != "http.disconnect":
                await queue.put(msg)
            await queue.put(msg)

        pumping = asyncio.create_task(pump())
        while (await queue.get()).get("more_body"):  # the first replica reads the whole body, then dies
            pass
        try:
            await self.replica(scope, queue.get, send)  # Serve's own retry on the live replica
        finally:
            pumping.cancel()


async def _echo(scope, receive, send):
    body = await _read_body(receive)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def test_request_resent_by_serve_after_its_replica_drained_the_body_gets_the_body():
    """Before the body travelled inside the request, the live replica waited for the body until the client
    gave up (a predict hung for the test client's 120 s in tests/scale/test_multinode.py)."""
    pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")
    from workbench.scale.ingress import RunIdMiddleware

    app = LostReplicaRetry(ServeRetryAfterDrain(RunIdMiddleware(_echo, TOKEN)), token=TOKEN)
    body = b'{"input": {"id": "kill-044"}}'
    chunks = [{"type": "http.request", "body": body[:5], "more_body": True}, {"type": "http.request", "body": body[5:]}]
    sent: list[dict] = []

    async def receive():
        if chunks:
            return chunks.pop(0)
        await asyncio.Event().wait()  # the client waits for its answer (no disconnect)

    async def send(message):
        sent.append(message)

    async def call():
        scope = {"type": "http", "method": "POST", "path": "/v1/pipelines/demo_digits/predict", "headers": []}
        await asyncio.wait_for(app(scope, receive, send), timeout=5.0)

    asyncio.run(call())
    assert sent[0]["status"] == 200 and sent[1]["body"] == body  # the body once, not twice


def test_replica_reads_the_body_once_from_the_request_and_the_disconnect_from_the_stream():
    pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")
    from workbench.scale.ingress import RunIdMiddleware
    from workbench.scale.proxy import BODY_SCOPE_KEY

    stream = [{"type": "http.request", "body": b"abc"}, {"type": "http.disconnect"}]
    got = []

    async def app(scope, receive, send):
        got.extend([await receive(), await receive()])

    async def receive():
        return stream.pop(0)

    scope = {"type": "http", "headers": [], BODY_SCOPE_KEY: b"abc"}
    asyncio.run(RunIdMiddleware(app, TOKEN)(scope, receive, None))
    assert got == [{"type": "http.request", "body": b"abc", "more_body": False}, {"type": "http.disconnect"}]


class GoneClientProxy:
    """Serve's proxy when the client leaves first: it reads the client until `http.disconnect`, cancels the
    replica's request and ends without an answer (its 499 sends nothing)."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope, receive, send):
        self.calls += 1
        while (await receive())["type"] != "http.disconnect":
            pass


def test_a_client_that_left_is_not_retried_nor_answered():
    inner = GoneClientProxy()
    sent: list[dict] = []
    msgs = [{"type": "http.request", "body": b"{}"}]

    async def receive():
        return msgs.pop(0) if msgs else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/pipelines/p/predict", "headers": []}
    asyncio.run(LostReplicaRetry(inner, token=TOKEN, retries=2)(scope, receive, send))
    assert inner.calls == 1 and sent == []
