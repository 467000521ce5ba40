"""`workbench bench api`: the combined prediction served three ways, side by side, at concurrency 1, 16, 64.

Three servers run at once, each in its own process (uvicorn on 127.0.0.1, a free port):

- `workbench`: `POST /v1/pipelines/demo_digits/predict` through the real app (`create_app`, as
  `workbench serve` runs it): gate rules, the digits network through its dynamic batcher,
  Luhn-checksum rules, the run recorded in SQLite (write-behind), no explanation asked;
- `hand_wired`: what a user writes instead (`_api_baselines.py`): FastAPI + ONNX Runtime with the
  same model + clipspy running the same two knowledge bases per request, no recording;
- `model_only`: FastAPI + the same model per request, no rules: the floor.

The client is `_http_load.py` (raw asyncio streams, keep-alive) in this process, at most C requests
in flight (closed loop). Rounds are interleaved: each concurrency level runs `ROUNDS` rounds, and each round drives
every server in turn (the order rotates), so a change in the machine's load hits all three alike.
Rows: `{"endpoint", "server", "concurrency", "rps", "p50_ms", "p95_ms", "p99_ms", "errors"}`
(latency from sending a request to reading its whole answer; `errors`: non-2xx answers and
transport errors; `status_codes`: the answers per HTTP status, 0 for a transport error), then two
extra rows: `overload` (open loop at 3x the workbench's measured rps at concurrency 64 for
`OVERLOAD_S` seconds: 429s counted apart, `p99_ms` over admitted answers, transport errors =
resets, and `recorded` = runs in the store / 200 answers) and
`healthz_during_8MiB` (worst `/healthz` latency of the workbench server while an 8 MiB text is
tokenised by all-MiniLM-L6-v2 over /v2). `EXTRA` keeps the load average before and after each
round, the ratios the goals are stated in, whether hand_wired and workbench agree on outputs, and
each server's CPU time per request (its process, all threads: what it costs, whatever share of
the shared cores it got).
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

from .report import percentile_ms

EXTRA: dict[str, Any] = {}
CONCURRENCY = (1, 16, 64)
ROUNDS = 3
OVERLOAD_S = 10.0
PIPELINE = "demo_digits"
MODEL = "demo-digits"
SERVERS = ("workbench", "hand_wired", "model_only")
PATHS = {"workbench": "/v1/pipelines/demo_digits/predict", "hand_wired": "/predict", "model_only": "/predict"}


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Start the three servers, drive each at each concurrency in interleaved rounds, then the
    overload and /healthz runs; return the rows (see the module docstring).

    Raises RuntimeError if a server does not become ready within 300 s (its log is quoted).
    """
    seconds = 2.0 if quick else 8.0  # per server, per round
    inputs = _pipeline_inputs()
    payloads = [{"input": x} for x in inputs]
    load: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        procs: dict[str, tuple[subprocess.Popen, Path]] = {}
        urls: dict[str, str] = {}
        try:
            for name in SERVERS:
                port = _free_port()
                urls[name] = f"http://127.0.0.1:{port}"
                procs[name] = _start_server(Path(tmp), name, port)
            for name in SERVERS:
                _wait_ready(urls[name], *procs[name])
            EXTRA["outputs_agree"] = _agreement(urls, payloads[:16])
            for name in SERVERS:  # warm-up: batchers, CLIPS pools, thread pools, caches
                asyncio.run(_drive(urls[name], "POST", PATHS[name], payloads, 16, 2.0))
            samples: dict[tuple[str, int], list[float]] = {}
            errors: dict[tuple[str, int], int] = {}
            codes: dict[tuple[str, int], dict[int, int]] = {}  # answers per HTTP status (0: transport error)
            walls: dict[tuple[str, int], float] = {}
            cpu: dict[tuple[str, int], float] = {}  # server process CPU seconds (user + system)
            for c in CONCURRENCY:
                for r in range(ROUNDS):
                    order = SERVERS[r % 3 :] + SERVERS[: r % 3]
                    for name in order:
                        before = os.getloadavg()[0]
                        cpu0 = _process_cpu_s(procs[name][0].pid)
                        lat, err, wall = asyncio.run(
                            _drive(
                                urls[name], "POST", PATHS[name], payloads, c, seconds, codes.setdefault((name, c), {})
                            )
                        )
                        cpu[(name, c)] = cpu.get((name, c), 0.0) + _process_cpu_s(procs[name][0].pid) - cpu0
                        load.append(
                            {"server": name, "concurrency": c, "round": r, "load_1m": [before, os.getloadavg()[0]]}
                        )
                        key = (name, c)
                        samples.setdefault(key, []).extend(lat)
                        errors[key] = errors.get(key, 0) + err
                        walls[key] = walls.get(key, 0.0) + wall
            rows = [
                _row(f"POST {PATHS[n]}", n, c, samples[(n, c)], errors[(n, c)], walls[(n, c)], codes[(n, c)])
                for c in CONCURRENCY
                for n in SERVERS
            ]
            rows.append(run_overload(urls["workbench"], payloads, 3.0 if quick else OVERLOAD_S, Path(tmp)))
            rows.append(_healthz_during_big_text(urls["workbench"]))
            EXTRA.update(
                {
                    "seconds_per_server_per_round": seconds,
                    "rounds": ROUNDS,
                    "servers": "uvicorn, 1 worker each, separate processes; client in the benchmark process",
                    "pipeline_input": "8-digit held-out ID numbers (8 images of 64 pixels)",
                    "load_avg": load,
                    "cores": os.cpu_count(),
                    "ratios": _ratios(rows),
                    "server_cpu_ms_per_request": {
                        f"{n} c={c}": round(cpu[(n, c)] / max(1, len(samples[(n, c)])) * 1000, 2)
                        for c in CONCURRENCY
                        for n in SERVERS
                    },
                }
            )
            return rows
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _ratios(rows: list[dict[str, Any]]) -> dict[str, float]:
    by = {
        (r["server"], r["concurrency"]): r
        for r in rows
        if r["endpoint"].startswith("POST") and r["concurrency"] in CONCURRENCY
    }
    out = {}
    for c in CONCURRENCY:
        wb, hw, mo = by[("workbench", c)], by[("hand_wired", c)], by[("model_only", c)]
        out[f"c{c}_rps_workbench/hand_wired"] = round(wb["rps"] / hw["rps"], 2) if hw["rps"] else float("nan")
        out[f"c{c}_rps_workbench/model_only"] = round(wb["rps"] / mo["rps"], 2) if mo["rps"] else float("nan")
        out[f"c{c}_p50_workbench/hand_wired"] = round(wb["p50_ms"] / hw["p50_ms"], 2)
        out[f"c{c}_p50_workbench/model_only"] = round(wb["p50_ms"] / mo["p50_ms"], 2)
    return out


def _agreement(urls: dict[str, str], payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """Do workbench and hand_wired give the same outputs (action, number, read, corrected position)?"""
    import httpx

    keys = ("action", "number", "read", "corrected_position", "checksum_valid")
    same = 0
    for p in payloads:
        a = httpx.post(urls["workbench"] + PATHS["workbench"], json=p, timeout=60).json()["outputs"]
        b = httpx.post(urls["hand_wired"] + PATHS["hand_wired"], json=p, timeout=60).json()
        same += all((a.get(k) or None) == (b.get(k) or None) for k in keys)
    return {"inputs": len(payloads), "same_outputs": same}


def _pipeline_inputs() -> list[dict[str, Any]]:
    from workbench.demo.digits_data import heldout_sequences

    return [s.to_input() for s in heldout_sequences(length=8)]


def _count_runs(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(db) as con:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]


def _overload(url: str, payloads: list[Any], rate: float, seconds: float, tmp: Path) -> dict[str, Any]:
    """Open loop: requests start at `rate` per second whatever the answers (a new connection when
    every open one is busy), for `seconds`. Returns the overload row: offered and admitted rates,
    429s (and any without Retry-After), admitted latency, resets (transport errors), and runs in
    the store right after the last answer against 200 answers (a 200 must mean recorded)."""
    from ._http_load import encode_requests, open_loop

    db = tmp / "bench.sqlite3"
    before = _count_runs(db)
    requests = encode_requests(url, "POST", PATHS["workbench"], payloads)
    samples, sent_s, peak = asyncio.run(open_loop(url, requests, rate, seconds))
    recorded = _count_runs(db) - before  # no settling: answers are sent after the commit
    codes: dict[int, int] = {}
    for x in samples:
        codes[x.status] = codes.get(x.status, 0) + 1
    admitted = [x.latency_s for x in samples if x.status == 200]
    no_retry_after = sum(1 for x in samples if x.status == 429 and not x.retry_after)
    resets = codes.get(0, 0)
    EXTRA["overload"] = {
        "target_rate_rps": round(rate, 1),
        "offered_rps": round(len(samples) / sent_s, 1),
        "seconds": seconds,
        "status_codes": {str(k): v for k, v in sorted(codes.items())},
        "429_without_retry_after": no_retry_after,
        "transport_errors": resets,
        "answered_200": codes.get(200, 0),
        "recorded_runs": recorded,
        "most_connections_open": peak,
        # where an admitted request's time went, as the client saw it (its own lateness in writing,
        # and whether it had to open a connection: a new one the server is slow to accept waits in
        # the kernel's accept queue, docs/serving.md Overload)
        "client_send_late_ms": {
            "p50": percentile_ms([x.send_late_s for x in samples], 50),
            "p99": percentile_ms([x.send_late_s for x in samples], 99),
        },
        "new_connections": sum(x.connect_s is not None for x in samples),
        "admitted_p99_ms_on_new_connections": percentile_ms(
            [x.latency_s for x in samples if x.status == 200 and x.connect_s is not None], 99
        ),
        "admitted_p99_ms_on_reused_connections": percentile_ms(
            [x.latency_s for x in samples if x.status == 200 and x.connect_s is None], 99
        ),
    }
    return {
        "endpoint": f"POST {PATHS['workbench']} (open loop, 3x the sustainable rate)",
        "server": "workbench",
        "concurrency": "overload",
        "offered_rps": round(len(samples) / sent_s, 1),
        "rps": round(codes.get(200, 0) / sent_s, 1),
        "p50_ms": percentile_ms(admitted, 50),
        "p95_ms": percentile_ms(admitted, 95),
        "p99_ms": percentile_ms(admitted, 99),
        "errors": resets + sum(n for c, n in codes.items() if c not in (0, 200, 429)),
        "rejected_429": codes.get(429, 0),
        "resets": resets,
        "recorded": f"{recorded}/{codes.get(200, 0)}",
    }


def sustainable_rate(url: str, payloads: list[Any], seconds: float) -> float:
    """The workbench's throughput (answers/s) in a closed loop at concurrency 64 for `seconds`."""
    lat, _, wall = asyncio.run(_drive(url, "POST", PATHS["workbench"], payloads, 64, seconds))
    return len(lat) / wall


def run_overload(url: str, payloads: list[Any], seconds: float, tmp: Path, factor: float = 3.0) -> dict[str, Any]:
    """Measure the sustainable rate, then offer `factor` times it (the overload row, with
    `sustainable_rps` added)."""
    rate = sustainable_rate(url, payloads, max(4.0, seconds / 2))
    load_before = os.getloadavg()[0]
    row = _overload(url, payloads, factor * rate, seconds, tmp)
    row["sustainable_rps"] = round(rate, 1)
    EXTRA["overload"]["sustainable_rps"] = round(rate, 1)
    EXTRA["overload"]["load_1m"] = [load_before, os.getloadavg()[0]]
    return row


def _healthz_during_big_text(url: str) -> dict[str, Any]:
    """Worst `/healthz` latency while one 8 MiB text goes to all-MiniLM-L6-v2 over /v2."""
    import json
    import threading

    import httpx

    text = "word " * (8 * 1024 * 1024 // 5)
    # encoded before the probes start: `json=` would encode it in the sending thread, one C call that
    # holds this (the client's) GIL for 40-65 ms while the probing thread is timing a /healthz answer
    body = json.dumps({"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": [text]}]}).encode()
    headers = {"content-type": "application/json"}
    done = threading.Event()
    status: list[int] = []

    def big() -> None:
        try:
            answer = httpx.post(url + "/v2/models/all-MiniLM-L6-v2/infer", content=body, headers=headers, timeout=300)
            status.append(answer.status_code)
        except httpx.HTTPError:
            status.append(0)
        finally:
            done.set()

    lat: list[float] = []
    t = threading.Thread(target=big)
    t0 = time.perf_counter()
    t.start()
    with httpx.Client(timeout=120) as c:
        while not done.is_set():
            s = time.perf_counter()
            c.get(url + "/healthz")
            lat.append(time.perf_counter() - s)
            time.sleep(0.01)
    t.join()
    EXTRA["healthz_during_8MiB"] = {"infer_status": status[0], "infer_seconds": round(time.perf_counter() - t0, 2)}
    return {
        "endpoint": "GET /healthz while 8 MiB text -> /v2 all-MiniLM-L6-v2",
        "server": "workbench",
        "concurrency": 1,
        "rps": round(len(lat) / (time.perf_counter() - t0), 1),
        "p50_ms": percentile_ms(lat, 50),
        "p95_ms": percentile_ms(lat, 95),
        "p99_ms": percentile_ms(lat, 99),
        "errors": int(status[0] != 200),
        "max_ms": percentile_ms(lat, 100),
    }


async def _drive(
    url: str,
    method: str,
    path: str,
    payloads: list[Any],
    concurrency: int,
    duration_s: float,
    codes: dict[int, int] | None = None,
) -> tuple[list[float], int, float]:
    """Closed loop for `duration_s` seconds: `concurrency` connections each send a request as soon as
    their previous one is answered (requests in flight at the deadline still count). Returns
    (latencies in seconds, non-2xx answers and transport errors, wall seconds); `codes`, when given, is
    added the number of answers per HTTP status (0: transport error)."""
    from ._http_load import closed_loop, encode_requests

    samples, wall = await closed_loop(url, encode_requests(url, method, path, payloads), concurrency, duration_s)
    for s in samples if codes is not None else ():
        codes[s.status] = codes.get(s.status, 0) + 1
    return [s.latency_s for s in samples], sum(not 200 <= s.status < 300 for s in samples), wall


def _row(
    endpoint: str,
    server: str,
    concurrency: int,
    latencies: list[float],
    errors: int,
    wall: float,
    codes: dict[int, int] | None = None,
) -> dict[str, Any]:
    """One table row; `status_codes` (answers per HTTP status, 0 = transport error) when `codes` is given."""
    extra = {"status_codes": {str(k): v for k, v in sorted(codes.items())}} if codes is not None else {}
    return {
        "endpoint": endpoint,
        "server": server,
        "concurrency": concurrency,
        "rps": round(len(latencies) / wall, 1),
        "p50_ms": percentile_ms(latencies, 50),
        "p95_ms": percentile_ms(latencies, 95),
        "p99_ms": percentile_ms(latencies, 99),
        "errors": errors,
        **extra,
    }


def _process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process has used so far (Linux `/proc`; 0.0
    elsewhere). Per request, this is the server's own cost, which the shared machine's load does
    not change as much as it changes the requests/s a server gets."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(tmp: Path, name: str, port: int) -> tuple[subprocess.Popen, Path]:
    env = {**os.environ, "WORKBENCH_DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}", "HF_HUB_OFFLINE": "1"}
    log_file = tmp / f"{name}.log"
    module = ["cli.benchmarks.api"] if name == "workbench" else ["cli.benchmarks._api_baselines", name]
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", *module, str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
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
    from cli.serve import uvicorn_options
    from workbench.config import get_settings
    from workbench.serving import Serving

    settings = get_settings()
    serving = Serving(settings=settings, load_models=[MODEL, "all-MiniLM-L6-v2"], serve_demo_lm=False)
    app = create_app(serving=serving, settings=settings)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, **uvicorn_options(settings))


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
