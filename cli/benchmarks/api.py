"""`workbench bench api`: HTTP throughput and latency of the REST API at concurrency 1, 16 and 64.

The server runs in its own process (uvicorn on 127.0.0.1, a free port, the real `create_app`)
so that client and server do not share an interpreter; the client is `httpx.AsyncClient` with
at most C requests in flight (closed loop: a new request starts when one finishes). Endpoints:

- `POST /v1/pipelines/demo_digits/predict`: the digits demo pipeline (gate rules, the digits
  network through its dynamic batcher, Luhn-checksum rules, explanation, the run recorded in
  SQLite) on held-out 8-digit ID numbers;
- `POST /v2/models/demo-digits/infer`: the same model alone through the KServe v2 endpoint
  (JSON tensors), the floor the pipeline adds its rules and recording to;
- `GET /healthz`: the HTTP stack alone.

Each concurrency level runs for a fixed time (20 s; 4 s with `--quick`) after a warm-up.
Rows: `{"endpoint", "concurrency", "rps", "p50_ms", "p95_ms", "p99_ms", "errors"}`; latency is
measured by the client from sending the request to reading the whole response. `errors` counts
non-2xx answers and transport errors. `EXTRA` records the request counts and server settings.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .report import percentile_ms

EXTRA: dict[str, Any] = {}
CONCURRENCY = (1, 16, 64)
PIPELINE = "demo_digits"
MODEL = "demo-digits"


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Start a server, drive each endpoint at each concurrency, return the rows (see module docstring).

    Raises RuntimeError if the server does not become ready within 300 s (its log is quoted).
    """

    duration_s = 4.0 if quick else 20.0
    inputs = _pipeline_inputs()
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        proc, log_file = _start_server(Path(tmp), port)
        try:
            _wait_ready(url, proc, log_file)
            bodies = {
                "POST /v1/pipelines/demo_digits/predict": [{"input": x} for x in inputs],
                "POST /v2/models/demo-digits/infer": [_infer_body(x) for x in inputs],
                "GET /healthz": [None],
            }
            rows = []
            for endpoint, payloads in bodies.items():
                method, path = endpoint.split(" ", 1)
                asyncio.run(_drive(url, method, path, payloads, 16, 2.0))  # warm-up: batchers, CLIPS pools, caches
                for c in CONCURRENCY:
                    lat, errors, wall = asyncio.run(_drive(url, method, path, payloads, c, duration_s))
                    rows.append(_row(endpoint, c, lat, errors, wall))
                    EXTRA.setdefault("requests", {})[f"{endpoint} c={c}"] = len(lat)
            EXTRA.update(
                {
                    "seconds_per_level": duration_s,
                    "server": "uvicorn, 1 worker, separate process",
                    "client": "httpx.AsyncClient, closed loop",
                    "pipeline_input": "8-digit held-out ID numbers (8 images of 64 pixels)",
                    "load_avg_1m": os.getloadavg()[0],
                }
            )
            return rows
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _pipeline_inputs() -> list[dict[str, Any]]:
    from workbench.demo.digits_data import heldout_sequences

    return [s.to_input() for s in heldout_sequences(length=8)]


def _infer_body(x: dict[str, Any]) -> dict[str, Any]:
    images = np.asarray(x["images"], dtype=np.float32)
    return {
        "inputs": [
            {"name": "pixels", "shape": [1, *images.shape], "datatype": "FP32", "data": images.reshape(-1).tolist()}
        ]
    }


async def _drive(
    url: str, method: str, path: str, payloads: list[Any], concurrency: int, duration_s: float
) -> tuple[list[float], int, float]:
    """Closed loop for `duration_s` seconds: `concurrency` workers each send a request as soon as
    their previous one is answered (requests in flight at the deadline still count)."""
    import httpx

    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + duration_s
    n = 0

    def counter():
        nonlocal n
        while time.perf_counter() < deadline:
            n += 1
            yield n - 1

    counter = counter()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors
        for i in counter:
            body = payloads[i % len(payloads)]
            t0 = time.perf_counter()
            try:
                r = await client.request(method, path, json=body)
                await r.aread()
                ok = r.is_success
            except httpx.HTTPError:
                ok = False
            latencies.append(time.perf_counter() - t0)
            errors += not ok

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    return latencies, errors, wall


def _row(endpoint: str, concurrency: int, latencies: list[float], errors: int, wall: float) -> dict[str, Any]:
    return {
        "endpoint": endpoint,
        "concurrency": concurrency,
        "rps": round(len(latencies) / wall, 1),
        "p50_ms": percentile_ms(latencies, 50),
        "p95_ms": percentile_ms(latencies, 95),
        "p99_ms": percentile_ms(latencies, 99),
        "errors": errors,
    }


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(tmp: Path, port: int) -> tuple[subprocess.Popen, Path]:
    env = {**os.environ, "WORKBENCH_DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}", "HF_HUB_OFFLINE": "1"}
    log_file = tmp / "server.log"
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.benchmarks.api", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    return proc, log_file


def _wait_ready(url: str, proc: subprocess.Popen, log_file: Path, timeout_s: float = 300.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the API server exited ({proc.returncode}):\n{log_file.read_text()[-3000:]}")
        try:
            if httpx.get(url + "/readyz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the API server was not ready after {timeout_s:.0f} s:\n{log_file.read_text()[-3000:]}")


def _serve(port: int) -> None:
    """The server process: the real app, loading only the model the benchmark uses."""
    import uvicorn

    from api.app import create_app
    from workbench.config import get_settings
    from workbench.serving import Serving

    settings = get_settings()
    app = create_app(serving=Serving(settings=settings, load_models=[MODEL], serve_demo_lm=False), settings=settings)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
