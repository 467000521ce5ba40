"""`workbench bench api --ray ADDRESS`: the combined prediction on Ray Serve, 1 pipeline replica vs 2.

Two Serve applications run side by side on the cluster (`/r1`: 1 pipeline replica, `/r2`: 2), each
the real REST API (`workbench.scale.deploy`: replicas of `api.app.create_app` running pipelines), recording in one
SQLite file (`--ray local`: one node) or the settings' database. The single-process server of
`bench api` (`cli.benchmarks.api`, uvicorn) runs beside them as the reference for results.

Rounds are interleaved as in `bench api`: each round drives `ray_1_replica` then `ray_2_replicas`
(order rotating) at concurrency 64, closed loop, the lean asyncio client of `bench api` from this
process. Rows have `bench api`'s shape (`{"endpoint", "server", "concurrency", "rps", "p50_ms",
"p95_ms", "p99_ms", "errors"}`); `EXTRA` holds the load average per round, the ratio 2 replicas /
1 replica, whether the three servers give identical outputs, and where the CPU went: CPU
milliseconds per answered request of every process of the local Ray instance and of this one (the
load client), by role (`cpu_ms_per_request`; `_proc_cpu`: with `WORKBENCH_RAY__INGRESS=haproxy` the HAProxy
processes and their Serve manager actors are roles of their own), and the cores they used together.
Replicas reserve 0.5 CPU each here so that both applications (3 replicas) fit a 2-CPU machine at
once; the cores they actually get are what the machine has.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from . import _proc_cpu
from . import api as bench_api

CONCURRENCY = 64
ROUNDS = 3
APPS = {"ray_1_replica": ("r1", 1), "ray_2_replicas": ("r2", 2)}


def run(
    address: str, quick: bool = False, extra: dict[str, Any] | None = None, store: str | None = None
) -> list[dict[str, Any]]:
    """Deploy both applications, check outputs against the single-process server, drive the interleaved
    rounds; return the rows. `store`: the run store's URL (default: a temporary SQLite file for `local`, the
    settings' database otherwise); e.g. a PostgreSQL database, to measure the replicas on a server store.
    Raises what `workbench.scale.connect` / `deploy` raise."""
    from api.app import create_app
    from workbench.config import get_settings
    from workbench.scale import connect, deploy, require_ray

    serve = require_ray().serve  # RayNotInstalledError (says how to install) rather than a bare ImportError

    extra = bench_api.EXTRA if extra is None else extra
    seconds = 3.0 if quick else 10.0
    payloads = [{"input": x} for x in bench_api._pipeline_inputs()]
    path = bench_api.PATHS["workbench"]
    load: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-api-ray-") as tmp:
        db = f"sqlite:///{Path(tmp) / 'bench.sqlite3'}"
        base = get_settings()
        url_env = os.environ.get("WORKBENCH_DATABASE_URL")
        database_url = store or (db if address == "local" or not url_env else url_env)
        ray_settings = base.ray.model_copy(
            update={"http_port": bench_api._free_port(), "replica_cpus": 0.5, "object_store_memory": 200 * 2**20}
        )
        settings = base.model_copy(update={"database_url": database_url, "ray": ray_settings})
        os.environ["WORKBENCH_DATABASE_URL"] = database_url  # the reference server records beside them
        cluster = connect(address, settings=settings, log_dir=Path(tmp) / "ray")
        port = bench_api._free_port()
        proc, log_file = bench_api._start_server(Path(tmp), "workbench", port)
        single = f"http://127.0.0.1:{port}"
        try:
            t0 = time.monotonic()
            urls = {
                server: deploy(
                    cluster, app=create_app, replicas=n, models=[], lms=[], name=prefix, route_prefix=f"/{prefix}"
                ).url  # pipelines only: no model or generation deployments (idle, they would only cost start-up)
                for server, (prefix, n) in APPS.items()
            }
            extra["deploy_s"] = round(time.monotonic() - t0, 1)
            extra["store"] = make_url(database_url).get_backend_name()  # sqlite / postgresql (never the URL)
            bench_api._wait_ready(single, proc, log_file)
            extra["outputs_identical"] = _identical({"single_process": single, **urls}, path, payloads[:16])
            for url in urls.values():  # warm-up
                asyncio.run(bench_api._drive(url, "POST", path, payloads, 16, 2.0))
            samples: dict[str, list[float]] = {s: [] for s in APPS}
            errors = dict.fromkeys(APPS, 0)
            walls = dict.fromkeys(APPS, 0.0)
            served_by: dict[str, set[str]] = {s: set() for s in APPS}
            cpu: dict[str, dict[str, float]] = {s: {} for s in APPS}
            for r in range(ROUNDS):
                order = list(APPS)[r % 2 :] + list(APPS)[: r % 2]
                for server in order:
                    before = os.getloadavg()[0]
                    cpu_before = _proc_cpu.snapshot()
                    lat, err, wall = asyncio.run(
                        bench_api._drive(urls[server], "POST", path, payloads, CONCURRENCY, seconds)
                    )
                    for role, sec in _proc_cpu.diff(cpu_before, _proc_cpu.snapshot()).items():
                        cpu[server][role] = cpu[server].get(role, 0.0) + sec
                    load.append({"server": server, "round": r, "load_1m": [before, os.getloadavg()[0]]})
                    samples[server].extend(lat)
                    errors[server] += err
                    walls[server] += wall
            for server, url in urls.items():
                served_by[server] = _replicas_seen(url, path, payloads[:32])
            rows = [bench_api._row(f"POST {path}", s, CONCURRENCY, samples[s], errors[s], walls[s]) for s in APPS]
            one, two = rows
            for name in list(urls):
                serve.delete(APPS[name][0])
            rows += _batching_rows(cluster, payloads, seconds, load)
            extra.update(
                {
                    "ray_address": address,
                    "ingress": settings.ray.ingress,
                    "seconds_per_server_per_round": seconds,
                    "rounds": ROUNDS,
                    "load_avg": load,
                    "cores": os.cpu_count(),
                    "replicas_seen": {k: sorted(v) for k, v in served_by.items()},
                    "cpu_ms_per_request": {s: _per_request(cpu[s], len(samples[s])) for s in APPS},
                    "cores_used": {s: round(sum(cpu[s].values()) / walls[s], 2) if walls[s] else None for s in APPS},
                    "ratios": {
                        "rps_2_replicas/1_replica": round(two["rps"] / one["rps"], 2) if one["rps"] else float("nan"),
                        "p99_2_replicas/1_replica": round(two["p99_ms"] / one["p99_ms"], 2)
                        if one["p99_ms"]
                        else float("nan"),
                    },
                }
            )
            return rows
        finally:
            cluster.shutdown()
            proc.terminate()
            try:
                proc.wait(30)
            except Exception:
                proc.kill()


def _per_request(cpu: dict[str, float], requests: int) -> dict[str, float]:
    """CPU milliseconds per answered request by process role (`_proc_cpu`), largest first, with the total;
    roles under 0.05 ms are summed into `other`."""
    if not requests:
        return {}
    ms = {k: 1000.0 * v / requests for k, v in cpu.items()}
    out = {k: round(v, 2) for k, v in sorted(ms.items(), key=lambda kv: -kv[1]) if v >= 0.05}
    out["other"] = round(sum(v for v in ms.values() if v < 0.05), 2)
    out["total"] = round(sum(ms.values()), 2)
    return out


def _batching_rows(cluster: Any, payloads: list[dict[str, Any]], seconds: float, load: list) -> list[dict[str, Any]]:
    """The digits model as its own deployment (one replica), batched by the project's batcher inside the
    replica vs Ray Serve's `@serve.batch`: `ModelReplica.infer` called through a DeploymentHandle from this
    process, closed loop at concurrency 64, one 8-image ID number (pixels [1, 8, 64]) per request,
    interleaved rounds."""
    import numpy as np
    from ray import serve

    from workbench.scale.replicas import ModelReplica

    doc = cluster.settings.model_dump(mode="json")
    handles = {}
    for mode in ("workbench", "serve"):
        app = (
            serve.deployment(ModelReplica)
            .options(name=f"model-{mode}", max_ongoing_requests=256, ray_actor_options={"num_cpus": 0})
            .bind(doc, bench_api.MODEL, mode)
        )
        handles[mode] = serve.run(app, name=f"batching-{mode}", route_prefix=None)
    arrays = [{"pixels": np.asarray([p["input"]["images"]], dtype=np.float32)} for p in payloads]

    async def drive(handle: Any) -> tuple[list[float], int, float]:
        lat: list[float] = []
        errors = 0
        deadline = time.perf_counter() + seconds

        async def worker(k: int) -> None:
            nonlocal errors
            i = k
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                reply = await handle.infer.remote(None, arrays[i % len(arrays)], 30.0)
                lat.append(time.perf_counter() - t0)
                errors += "error" in reply
                i += CONCURRENCY

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(CONCURRENCY)))
        return lat, errors, time.perf_counter() - t0

    for h in handles.values():  # warm-up
        h.infer.remote(None, arrays[0], 30.0).result(timeout_s=120)
    samples: dict[str, list[float]] = {m: [] for m in handles}
    errs = dict.fromkeys(handles, 0)
    walls = dict.fromkeys(handles, 0.0)
    for r in range(ROUNDS):
        for mode in list(handles)[r % 2 :] + list(handles)[: r % 2]:
            before = os.getloadavg()[0]
            lat, err, wall = asyncio.run(drive(handles[mode]))
            load.append({"server": f"model_{mode}_batching", "round": r, "load_1m": [before, os.getloadavg()[0]]})
            samples[mode] += lat
            errs[mode] += err
            walls[mode] += wall
    names = {"workbench": "model_workbench_batcher", "serve": "model_serve_batch"}
    return [
        bench_api._row("handle ModelReplica.infer", names[m], CONCURRENCY, samples[m], errs[m], walls[m])
        for m in handles
    ]


def _identical(urls: dict[str, str], path: str, payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """Outputs of every server on the same inputs, compared with the single-process server's."""
    import httpx

    got = {
        name: [httpx.post(url + path, json=p, timeout=60).json().get("outputs") for p in payloads]
        for name, url in urls.items()
    }
    ref = got["single_process"]
    return {
        "inputs": len(payloads),
        **{f"{name}_same": sum(a == b for a, b in zip(v, ref)) for name, v in got.items() if name != "single_process"},
    }


def _replicas_seen(url: str, path: str, payloads: list[dict[str, Any]]) -> set[str]:
    import httpx

    async def main() -> set[str]:
        async with httpx.AsyncClient(timeout=60) as client:
            rs = await asyncio.gather(*(client.post(url + path, json=p) for p in payloads))
        return {r.json().get("served_by") or "" for r in rs}

    return asyncio.run(main())
