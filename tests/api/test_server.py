"""Health, readiness, metrics, OpenAPI, error shapes, and `workbench serve` as a real process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

import httpx
from api_live import LiveServer, make_settings, served_url

from api.app import create_app
from workbench.serving import Serving


def test_readyz_is_503_until_loading_finishes(tmp_path):
    gate = threading.Event()
    settings = make_settings(tmp_path)
    serving = Serving(settings=settings, load_models=False, serve_demo_lm=False, load=lambda s: gate.wait(30))
    server = LiveServer(create_app(serving=serving, settings=settings)).start(ready=False)
    try:
        assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
        r = httpx.get(server.url + "/readyz")
        assert r.status_code == 503 and r.json()["state"] == "loading" and r.headers["Retry-After"] == "1"
        assert httpx.get(server.url + "/v2/health/ready").status_code == 503
        assert httpx.get(server.url + "/v2/health/live").status_code == 200
        r = httpx.get(server.url + "/v1/pipelines")
        assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable" and "Retry-After" in r.headers
        gate.set()
        deadline = time.monotonic() + 30
        while httpx.get(server.url + "/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert httpx.get(server.url + "/readyz").json()["ready"] is True
    finally:
        gate.set()
        server.stop()


def test_failed_loading_is_reported_not_hidden(tmp_path):
    def broken(_):
        raise FileNotFoundError("models/missing.onnx")

    settings = make_settings(tmp_path)
    serving = Serving(settings=settings, load_models=False, serve_demo_lm=False, load=broken)
    server = LiveServer(create_app(serving=serving, settings=settings)).start(ready=False)
    try:
        deadline = time.monotonic() + 30
        while httpx.get(server.url + "/readyz").json()["state"] == "loading" and time.monotonic() < deadline:
            time.sleep(0.05)
        r = httpx.get(server.url + "/readyz")
        assert r.status_code == 503 and r.json()["state"] == "failed" and "models/missing.onnx" in r.json()["error"]
    finally:
        server.stop()


def test_metrics_have_http_and_runtime_series(model_server):
    httpx.get(model_server.url + "/v2/models/digits")
    body = {"inputs": [{"name": "pixels", "shape": [1, 1, 64], "datatype": "FP32", "data": [0.0] * 64}]}
    assert httpx.post(model_server.url + "/v2/models/digits/infer", json=body).status_code == 200
    text = httpx.get(model_server.url + "/metrics").text
    version = httpx.get(model_server.url + "/v2/models/digits").json()["versions"][0]
    assert 'workbench_http_requests_total{method="GET",route="/v2/models/{model}",status="200"}' in text
    assert "workbench_http_request_duration_seconds_bucket" in text
    # Triton's model / version pair on every model series
    assert f'workbench_model_requests_total{{model="digits",version="{version}"}}' in text
    assert f'workbench_model_failures_total{{model="digits",reason="cancelled",version="{version}"}}' in text
    assert "workbench_model_batch_size_bucket" in text


def test_openapi_docs_and_stable_operation_ids(model_server):
    assert httpx.get(model_server.url + "/docs").status_code == 200
    doc = httpx.get(model_server.url + "/openapi.json").json()
    ids = [op["operationId"] for path in doc["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))
    for expected in (
        "predict",
        "put_pipeline",
        "get_run",
        "put_knowledge_base",
        "ask_knowledge_base",
        "run_knowledge_base",
        "v2_model_infer",
        "create_completion",
        "create_chat_completion",
        "list_generation_models",
        "readyz",
    ):
        assert expected in ids
    assert "ErrorResponse" in doc["components"]["schemas"]


def test_error_shapes_and_no_stack_traces(tmp_path):
    class Exploding(Serving):
        async def list_pipelines(self):
            raise RuntimeError("secret internals /etc/passwd")

    settings = make_settings(tmp_path)
    server = LiveServer(
        create_app(serving=Exploding(settings=settings, load_models=False, serve_demo_lm=False), settings=settings)
    ).start()
    try:
        r = httpx.get(server.url + "/v1/pipelines", headers={"X-Request-Id": "abc123"})
        assert r.status_code == 500
        err = r.json()["error"]
        assert err["code"] == "internal_error" and err["request_id"] == "abc123" and "abc123" in err["message"]
        assert r.headers["X-Request-Id"] == "abc123"
        r = httpx.get(server.url + "/healthz", headers={"X-Request-Id": "bad id\twith spaces"})
        assert len(r.headers["X-Request-Id"]) == 32 and " " not in r.headers["X-Request-Id"]
        assert "Traceback" not in r.text and "secret internals" not in r.text and "RuntimeError" not in r.text
        r = httpx.delete(server.url + "/v1/runs/abc")
        assert r.headers.get_list("X-Request-Id") == [r.json()["error"]["request_id"]]
        assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
        assert r.headers["Allow"] == "GET, HEAD"
        # n11 #16: the methods of every route of the path, not only the first one's (was "allow: GET")
        r = httpx.delete(server.url + "/v1/kb/family")
        assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD, PUT", r.headers.get("Allow")
        r = httpx.patch(server.url + "/v1/pipelines/x")
        assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD, PUT, DELETE", r.headers.get("Allow")
        r = httpx.get(server.url + "/v2/models/x/nothing")
        assert r.status_code == 404 and set(r.json()) == {"error"}
        r = httpx.post(server.url + "/v1/kb/x/run", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["error"]["code"] == "validation_failed"
    finally:
        server.stop()


def test_workbench_serve_runs_uvicorn(tmp_path):
    env = {
        **os.environ,
        "WORKBENCH_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.sqlite3'}",
        "WORKBENCH_KNOWLEDGE_BASE_DIR": str(tmp_path),
        "WORKBENCH_PIPELINE_DIR": str(tmp_path),
    }
    log = tmp_path / "serve.log"
    with log.open("w") as out:  # --port 0: the server binds a port the system picks and names it first
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "serve", "--port", "0", "--log-level", "warning"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        url = served_url(proc, log)
        assert re.fullmatch(r"http://127\.0\.0\.1:[1-9][0-9]*", url), url
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "workbench serve did not answer"
            time.sleep(0.2)
        assert httpx.get(f"{url}/v2").json()["name"] == "workbench"
    finally:
        proc.terminate()
        proc.wait(30)


def test_serve_rejects_a_bad_setting(monkeypatch):
    from typer.testing import CliRunner

    from cli.app import app
    from workbench.config import get_settings

    monkeypatch.setenv("WORKBENCH_SERVER__PORT", "99999")
    get_settings.cache_clear()
    r = CliRunner().invoke(app, ["serve"])
    assert r.exit_code == 2 and "WORKBENCH_SERVER__PORT" in r.output and "Traceback" not in r.output


def test_serve_refuses_port_0_with_ray():
    from typer.testing import CliRunner

    from cli.app import app

    r = CliRunner().invoke(app, ["serve", "--ray", "local", "--port", "0"])
    assert r.exit_code == 2 and "--port 0 is not supported with --ray" in r.output, r.output
