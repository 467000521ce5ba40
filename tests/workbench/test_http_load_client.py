"""The benchmarks' lean HTTP client (cli/benchmarks/_http_load.py) against a real uvicorn server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import uvicorn
from fastapi import FastAPI

from cli.benchmarks import _http_load
from cli.benchmarks._http_load import closed_loop, encode_requests, open_loop


def test_a_route_prefix_in_the_url_goes_before_the_path():
    # regression: `bench api --ray` measured 404s (Ray Serve apps live under /r1, /r2) as requests/s
    raw = encode_requests("http://127.0.0.1:9/r1", "POST", "/v1/x", [{"a": 1}])[0]
    assert raw.startswith(b"POST /r1/v1/x HTTP/1.1\r\nHost: 127.0.0.1:9\r\n")
    assert encode_requests("http://127.0.0.1:9", "POST", "/v1/x", [{}])[0].startswith(b"POST /v1/x HTTP/1.1")


def test_closed_loop_reaches_a_prefixed_app_on_a_real_server():
    app = FastAPI()
    sub = FastAPI()

    @sub.post("/v1/echo")
    def echo(body: dict) -> dict:
        return body

    app.mount("/r1", sub)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/r1"
        samples, _ = asyncio.run(closed_loop(url, encode_requests(url, "POST", "/v1/echo", [{"n": 1}]), 2, 0.5))
        assert samples and {s.status for s in samples} == {200}
    finally:
        server.should_exit = True
        thread.join(10)


class _Server:
    """A real uvicorn server on 127.0.0.1 in a thread (`keep_alive_s`: its idle-connection timeout)."""

    def __init__(self, app, keep_alive_s: float):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", timeout_keep_alive=keep_alive_s
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def _echo_app() -> FastAPI:
    app = FastAPI()

    @app.post("/v1/echo")
    def echo(body: dict) -> dict:
        return body

    return app


def test_open_loop_does_not_reuse_a_connection_the_server_closed():
    """Regression (issue 14 overload runs): uvicorn closes a connection idle for its keep-alive
    timeout; the open-loop client reused such connections and counted the lost requests as resets
    (28-31 transport errors in a 20 s run, none of them seen by the server)."""
    with _Server(_echo_app(), keep_alive_s=0.2) as url:  # every connection is closed between requests
        requests = encode_requests(url, "POST", "/v1/echo", [{"n": 1}])
        samples, _, _ = asyncio.run(open_loop(url, requests, rate=4.0, duration_s=1.5))
    assert len(samples) >= 5
    assert [s.status for s in samples] == [200] * len(samples)
    assert all(s.connect_s is not None for s in samples)  # each went on a new connection


def test_open_loop_reuses_a_live_connection_and_expires_old_ones(monkeypatch):
    with _Server(_echo_app(), keep_alive_s=30) as url:
        requests = encode_requests(url, "POST", "/v1/echo", [{"n": 1}])
        samples, _, _ = asyncio.run(open_loop(url, requests, rate=5.0, duration_s=1.0))
        assert {s.status for s in samples} == {200}
        assert sum(s.connect_s is not None for s in samples) < len(samples)  # idle connections were reused
        monkeypatch.setattr(_http_load, "KEEPALIVE_EXPIRY_S", 0.0)  # every idle connection is too old
        samples, _, _ = asyncio.run(open_loop(url, requests, rate=5.0, duration_s=1.0))
        assert {s.status for s in samples} == {200}
        assert all(s.connect_s is not None for s in samples)
