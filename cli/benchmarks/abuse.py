"""`workbench bench abuse`: the API under hostile and careless requests while real clients use it.

The server runs in its own process (uvicorn on 127.0.0.1, a free port, the real `create_app` over
the demo knowledge bases, pipelines and models; keys set). For a fixed time (20 s; 5 s with
`--quick`) 8 abusive clients send, in turn, the requests of issue 16 and more: a 200,000-deep JSON
body, a huge `max_depth`, a 2 MB gzip body that inflates to 2 GiB, an 8 MiB body, a 100 MB
Content-Length with no body, non-UTF-8 JSON, lone surrogate escapes, bad names, truncated gzip,
a garbage request line, a body abandoned half-way, random bytes under random content types; while
2 well-behaved clients ask the family knowledge base and predict the intents pipeline.

Rows, one per kind of request: `{"kind", "tried", "answered_4xx", "shed_503", "failed_5xx",
"no_answer", "p50_ms", "p99_ms"}` (`shed_503`: refused with Retry-After because the server held its
budget of body bytes; `abandoned_body` counts as 499, the client left); the well-behaved rows count
`ok` and `lost` (not answered 2xx). `EXTRA`
holds the server's peak and final resident memory and whether it was still up at the end.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .api import _free_port, _wait_ready

EXTRA: dict[str, Any] = {}
KEY = "bench-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
ABUSERS = 8
CLIENTS = 2


def _bomb() -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * (1 << 20)
    return b"".join(comp.compress(zeros) for _ in range(2048)) + comp.flush()


def _requests() -> dict[str, Callable[[random.Random], tuple[str, str, dict[str, str], bytes]]]:
    """Kind -> a maker of (method, path, headers, body)."""
    deep = b'{"input": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    bomb = _bomb()
    big = b'{"input": {"text": "' + b"a" * (8 << 20) + b'"}}'
    j = {"content-type": "application/json"}
    return {
        "deep_json_200k": lambda r: ("POST", "/v1/pipelines/demo_intents/predict", j, deep),
        "huge_max_depth": lambda r: (
            "POST",
            "/v1/kb/family/ask",
            j,
            json.dumps({"goal": "(ancestor ?x otto)", "max_depth": 10 ** r.randint(4, 30)}).encode(),
        ),
        "gzip_bomb_2GiB": lambda r: ("POST", "/v2/models/demo-digits/infer", {**j, "content-encoding": "gzip"}, bomb),
        "body_8MiB": lambda r: ("POST", "/v1/pipelines/demo_intents/predict", j, big),
        "non_utf8": lambda r: ("PUT", "/v1/kb/x", {**AUTH, **j}, b"5\xff\xfe" + r.randbytes(16)),
        "lone_surrogate": lambda r: (
            "POST",
            "/v1/pipelines/demo_intents/predict",
            j,
            b'{"input": {"text": "a\\ud8' + f"{r.randint(0, 255):02x}".encode() + b'"}}',
        ),
        "bad_name": lambda r: (
            "PUT",
            "/v1/kb/" + r.choice(["a" * 300, "x.clp", "a%5C..%5Cb", "..", "%00x", "-x"]),
            {**AUTH, "content-type": "text/plain"},
            b"(deftemplate z (slot a))",
        ),
        "truncated_gzip": lambda r: (
            "POST",
            "/v1/kb/family/run",
            {**j, "content-encoding": "gzip"},
            zlib.compress(b'{"facts": []}' * 50)[: r.randint(1, 20)],
        ),
        "random_bytes": lambda r: (
            r.choice(["POST", "PUT"]),
            r.choice(
                ["/v1/kb/family/run", "/v1/pipelines/demo_intents/predict", "/v2/models/demo-digits/infer", "/v1/kb/y"]
            ),
            {
                **AUTH,
                "content-type": r.choice(["application/json", "text/plain", "application/yaml", "application/x-foo"]),
            },
            r.randbytes(r.randint(0, 4096)),
        ),
    }


RAW = {
    # Content-Length of 100 MB and no body: must be answered without waiting for the body
    "declared_100MB_no_body": b"POST /v1/pipelines/demo_intents/predict HTTP/1.1\r\nHost: x\r\n"
    b"Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n",
    "garbage_request_line": b"\x16\x03\x01 NOT HTTP\r\n\r\n",
    # half the declared body, then the client goes away
    "abandoned_body": b"POST /v1/kb/family/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b'Content-Length: 1000\r\n\r\n{"goal": "(ancestor',
}


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Start a server, abuse it for a fixed time beside well-behaved clients, return the rows."""
    duration_s = 5.0 if quick else 20.0
    with tempfile.TemporaryDirectory(prefix="bench-abuse-") as tmp:
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "WORKBENCH_DATABASE_URL": f"sqlite:///{Path(tmp) / 'abuse.sqlite3'}",
            "WORKBENCH_API_KEYS": KEY,
            "HF_HUB_OFFLINE": "1",
        }
        log_file = Path(tmp) / "server.log"
        with open(log_file, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "cli.serve:create_app", "--factory", "--port", str(port)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_ready(url, proc, log_file)
            rss_before = _rss_kib(proc.pid)
            stats = asyncio.run(_abuse(url, port, duration_s))
            alive = proc.poll() is None
            EXTRA.update(
                {
                    "seconds": duration_s,
                    "abusive_clients": ABUSERS,
                    "well_behaved_clients": CLIENTS,
                    "server_alive_after": alive,
                    "server_exit_code": proc.returncode,
                    "server_rss_mib_before": round(rss_before[0] / 1024, 1),
                    "server_peak_rss_mib_before": round(rss_before[1] / 1024, 1),  # start-up (model loading)
                    "server_rss_mib_after": round(_rss_kib(proc.pid)[0] / 1024, 1) if alive else None,
                    "server_peak_rss_mib": round(_rss_kib(proc.pid)[1] / 1024, 1) if alive else None,
                    "tracebacks_in_log": log_file.read_text(errors="replace").count("Traceback"),
                    "load_average_1m": os.getloadavg()[0],
                }
            )
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return stats


def _rss_kib(pid: int) -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


async def _abuse(url: str, port: int, duration_s: float) -> list[dict[str, Any]]:
    import httpx

    makers = _requests()
    results: dict[str, list[tuple[int | None, float]]] = defaultdict(list)
    deadline = time.monotonic() + duration_s
    kinds = itertools.cycle(list(makers) + list(RAW))

    async def abuser(seed: int) -> None:
        rnd = random.Random(seed)
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            while time.monotonic() < deadline:
                kind = next(kinds)
                t0 = time.perf_counter()
                status: int | None
                if kind in RAW:
                    status = await _raw(port, RAW[kind], expect_answer=kind != "abandoned_body")
                else:
                    method, path, headers, body = makers[kind](rnd)
                    try:
                        status = (await client.request(method, path, headers=headers, content=body)).status_code
                    except httpx.HTTPError:
                        status = None
                results[kind].append((status, time.perf_counter() - t0))

    async def client_loop(i: int) -> None:
        texts = ["I lost my card", "what is my balance", "close my account please", "card stolen yesterday"]
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            n = 0
            while time.monotonic() < deadline:
                n += 1
                if n % 2:
                    kind, req = (
                        "well_behaved_ask",
                        client.post("/v1/kb/family/ask", json={"goal": "(ancestor ?x otto)"}),
                    )
                else:
                    body = {"input": {"text": texts[n % len(texts)]}}
                    kind, req = "well_behaved_predict", client.post("/v1/pipelines/demo_intents/predict", json=body)
                t0 = time.perf_counter()
                try:
                    status: int | None = (await req).status_code
                except httpx.HTTPError:
                    status = None
                results[kind].append((status, time.perf_counter() - t0))

    await asyncio.gather(*(abuser(s) for s in range(ABUSERS)), *(client_loop(i) for i in range(CLIENTS)))
    rows = []
    for kind in sorted(results):
        got = results[kind]
        lat = np.array([t for _, t in got]) * 1000
        codes = [s for s, _ in got]
        row: dict[str, Any] = {"kind": kind, "tried": len(got)}
        if kind.startswith("well_behaved"):
            row["ok"] = sum(1 for s in codes if s is not None and 200 <= s < 300)
            row["lost"] = len(got) - row["ok"]
        else:
            row["answered_4xx"] = sum(1 for s in codes if s is not None and 400 <= s < 500)
            row["shed_503"] = sum(1 for s in codes if s == 503)  # refused for load, with Retry-After
            row["failed_5xx"] = sum(1 for s in codes if s is not None and s >= 500 and s != 503)
            row["no_answer"] = sum(1 for s in codes if s is None)
        row["p50_ms"] = round(float(np.percentile(lat, 50)), 1)
        row["p99_ms"] = round(float(np.percentile(lat, 99)), 1)
        rows.append(row)
    return rows


async def _raw(port: int, data: bytes, expect_answer: bool) -> int | None:
    """Send raw bytes; the status of the answer (None when none came)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return None
    try:
        writer.write(data)
        await writer.drain()
        if not expect_answer:
            return 499  # the client left: nothing to answer
        line = await asyncio.wait_for(reader.readline(), 30)
        parts = line.split()
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    except (OSError, TimeoutError):
        return None
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (OSError, ConnectionError):
            pass


if __name__ == "__main__":  # pragma: no cover - manual run
    print(json.dumps(run(quick="--quick" in sys.argv), indent=1))
    print(json.dumps(EXTRA, indent=1))
