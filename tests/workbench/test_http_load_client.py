"""The benchmarks' lean HTTP client (cli/benchmarks/_http_load.py) against a real uvicorn server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import uvicorn
from fastapi import FastAPI

from cli.benchmarks._http_load import closed_loop, encode_requests


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
