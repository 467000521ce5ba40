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


class FlakyProxy:
    """ASGI app: loses the first `lose` requests (returns without answering), then echoes what it saw."""

    def __init__(self, lose: int) -> None:
        self.lose = lose
        self.seen: list[dict] = []

    async def __call__(self, scope, receive, send):
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
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
