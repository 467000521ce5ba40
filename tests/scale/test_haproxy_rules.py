"""The HAProxy ingress's rules (`workbench.scale.haproxy`) in a real HAProxy, on the configuration Ray's own
`HAProxyApi` generates, in front of two stand-in replicas (plain HTTP/1.1 servers on 127.0.0.1) that close
the connection without an answer the first time they see a request, as a replica killed mid-request does
(after it committed the run, or before). Checked: every request carries a run id that HAProxy chose and that a
client cannot set; a lost prediction or GET is sent again, to the other replica, under the same run id; any
other request is answered 503 (the API's error shape, Retry-After) and not sent again; a request that no
replica answers gets that 503 after the configured retries. The Ray path (Serve's HAProxyManager running
HAProxy through `haproxy_exec.sh`) is exercised on the two-node cluster in test_haproxy_ingress.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")

from postgres_server import free_port  # noqa: E402

TOKEN = "0123456789abcdef0123456789abcdef"


class StandInReplica:
    """An HTTP/1.1 server (keep-alive, Content-Length bodies) on a thread of its own. `GET /-/healthz` is
    answered 200; a request whose `x-workbench-run-id` (or path, without one) it has not seen before on
    `shared` is recorded and its connection closed without an answer, unless `answer_first`; seen again, it
    is answered 200 with the headers it came with."""

    def __init__(self, name: str, shared: dict, answer_first: bool = False, cut: bool = False) -> None:
        self.name, self.shared, self.answer_first, self.cut = name, shared, answer_first, cut
        self.port = free_port()
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        assert ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", self.port))
        ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
                await reader.readexactly(int(headers.get("content-length", "0")))
                if path == "/-/healthz":
                    self._answer(writer, 200, {"ok": True})
                    await writer.drain()
                    continue
                key = headers.get("x-workbench-run-id") or f"{method} {path}"
                self.seen.append((method, path, headers))
                first = key not in self.shared
                self.shared[key] = self.shared.get(key, 0) + 1
                if first and not self.answer_first:
                    if self.cut:  # killed between the answer's head and its body
                        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 99\r\n\r\n")
                        await writer.drain()
                        await asyncio.sleep(0.2)
                    writer.transport.abort()  # as a killed process: the connection goes, no answer
                    return
                pad = "x" * int(headers.get("x-pad", "0"))  # a large answer
                self._answer(writer, 200, {"served_by": self.name, "headers": headers, "pad": pad})
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    @staticmethod
    def _answer(writer: asyncio.StreamWriter, status: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        writer.write(
            f"HTTP/1.1 {status} OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
            + body
        )

    def stop(self) -> None:
        async def close() -> None:
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._loop.stop()

        asyncio.run_coroutine_threadsafe(close(), self._loop)
        self._thread.join(10)


def _ray_config(tmp: Path, port: int, replicas: list[StandInReplica], retries: int) -> Path:
    """HAProxy's configuration as Ray's `HAProxyApi` writes it for one application on `/` (what Serve's
    HAProxyManager runs), with the retry policy `workbench.scale.haproxy.controller_env` asks Ray for."""
    from ray.serve._private.haproxy import BackendConfig, HAProxyApi, HAProxyConfig, ServerConfig
    from ray.serve.config import HTTPOptions

    from workbench.scale.haproxy import BUFSIZE

    cfg = HAProxyConfig(
        http_options=HTTPOptions(host="127.0.0.1", port=port),
        socket_path=str(tmp / "admin.sock"),
        server_state_base=str(tmp),
        server_state_file=str(tmp / "server-state"),
        enable_hap_optimization=False,
        stats_port=free_port(),
        metrics_port=free_port(),
        metrics_enabled=False,
        has_received_routes=True,
        has_received_servers=True,
        is_head=True,
        retry_on="conn-failure empty-response",
        retries=retries,
        health_check_inter="1s",
        bufsize=BUFSIZE,  # what controller_env asks Ray for
    )
    servers = [ServerConfig(name=f"SERVE_REPLICA_{r.name}", host="127.0.0.1", port=r.port) for r in replicas]
    backend = BackendConfig(name="app", path_prefix="/", servers=servers, app_name="app")
    api = HAProxyApi(cfg=cfg, backend_configs={"app": backend}, config_file_path=str(tmp / "haproxy.cfg"))
    api._generate_config_file_internal()
    return Path(api.config_file_path)


@pytest.fixture
def haproxy(tmp_path):
    """`start(answer_first=False, retries=2, cut=False) -> (url, replicas, shared)`: a real HAProxy started through
    `haproxy_exec.sh` (the rules added to Ray's configuration) in front of two stand-in replicas."""
    from workbench.scale.haproxy import EXEC_SCRIPT, controller_env

    procs: list[subprocess.Popen] = []
    replicas: list[StandInReplica] = []

    def start(answer_first: bool = False, retries: int = 2, cut: bool = False):
        shared: dict = {}
        replicas.extend(StandInReplica(n, shared, answer_first, cut) for n in ("a", "b"))
        port = free_port()
        cfg = _ray_config(tmp_path, port, replicas, retries)
        env = {**os.environ, **controller_env(TOKEN, retries)}
        check = subprocess.run([str(EXEC_SCRIPT), "-c", "-f", str(cfg)], env=env, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr  # HAProxy's own check of the configuration
        proc = subprocess.Popen([str(EXEC_SCRIPT), "-db", "-f", str(cfg)], env=env, stderr=subprocess.PIPE)
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/-/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "HAProxy did not come up"
            time.sleep(0.2)
        return url, replicas, shared

    yield start
    for p in procs:
        p.terminate()
        p.wait(10)
    for r in replicas:
        r.stop()


def test_the_rules_are_added_once_to_rays_configuration(tmp_path):
    from workbench.scale.haproxy import MARK, add_rules

    cfg = _ray_config(tmp_path, free_port(), [], 2).read_text()
    once = add_rules(cfg, TOKEN, 2, "/x/workbench-503.http")
    assert once.count(MARK) == 1 and add_rules(once, TOKEN, 2, "/x/workbench-503.http") == once
    front = once.split("frontend http_frontend", 1)[1].split("\nbackend ", 1)[0]
    assert front.index(MARK) < front.index("acl healthcheck")  # before Ray's own rules
    assert once.count("errorfile 50") == 3 and once.count("/x/workbench-503.http") == 3
    with pytest.raises(ValueError, match="not Ray's template"):
        add_rules("global\n    maxconn 10\n", TOKEN, 2, "/x")
    with pytest.raises(ValueError, match="token"):
        add_rules(cfg, "bad token\n", 2, "/x")


def test_a_lost_prediction_is_sent_again_to_the_other_replica_under_the_same_run_id(haproxy):
    url, (a, b), shared = haproxy()
    forged = {"x-workbench-run-id": "mine", "x-workbench-attempt": "1", "x-workbench-proxy": "guess"}
    r = httpx.post(f"{url}/v1/pipelines/demo_digits/predict", json={"input": {}}, headers=forged, timeout=30)
    assert r.status_code == 200, r.text
    tries = [h for _, p, h in a.seen + b.seen if p.endswith("/predict")]
    assert len(tries) == 2
    assert {len(a.seen), len(b.seen)} == {1}  # redispatched: the second attempt went to the other replica
    run_ids = {h["x-workbench-run-id"] for h in tries}
    assert len(run_ids) == 1 and "mine" not in run_ids  # chosen by HAProxy, once per request
    assert all(h["x-workbench-proxy"] == TOKEN and h["x-workbench-attempt"] == "any" for h in tries)
    assert len({h["x-request-id"] for h in tries}) == 1
    assert r.json()["headers"]["x-workbench-run-id"] in run_ids
    again = httpx.post(f"{url}/v1/pipelines/demo_digits/predict", json={"input": {}}, timeout=30)
    assert again.status_code == 200 and again.json()["headers"]["x-workbench-run-id"] not in run_ids
    g = httpx.get(f"{url}/v1/runs", timeout=30)  # a read is retried too
    assert g.status_code == 200, g.text


def test_other_requests_are_not_sent_again_and_get_a_clear_503(haproxy):
    url, (a, b), shared = haproxy()
    r = httpx.post(f"{url}/v1/pipelines/demo_digits/stage", json={"stage": "production"}, timeout=30)
    assert r.status_code == 503
    assert r.headers["retry-after"] == "1"
    err = r.json()["error"]
    assert err["code"] == "unavailable" and "replica" in err["message"] and "may or may not" in err["message"]
    assert len([1 for _, p, _ in a.seen + b.seen if p.endswith("/stage")]) == 1  # sent once


def test_a_prediction_no_replica_answers_gets_the_503_after_the_retries(haproxy):
    url, (a, b), shared = haproxy(retries=0)
    r = httpx.post(f"{url}/v1/pipelines/demo_digits/predict", json={"input": {}}, timeout=30)
    assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable"
    assert len(a.seen) + len(b.seen) == 1  # retries=0: one attempt


def test_answers_pass_through_unchanged(haproxy):
    url, (a, b), shared = haproxy(answer_first=True)
    rs = [httpx.post(f"{url}/v1/pipelines/demo_digits/predict", json={"input": {}}, timeout=30) for _ in range(6)]
    assert [r.status_code for r in rs] == [200] * 6
    assert {r.json()["served_by"] for r in rs} == {"a", "b"}  # both replicas take requests
    assert len({r.json()["headers"]["x-workbench-run-id"] for r in rs}) == 6
    for size in (100, 70_000, 300_000):  # below, at and over what HAProxy holds whole: all passed on
        r = httpx.post(f"{url}/v1/pipelines/x/predict", json={}, headers={"x-pad": str(size)}, timeout=30)
        assert r.status_code == 200 and len(r.json()["pad"]) == size


def test_a_prediction_cut_after_its_head_gets_the_503_not_a_cut_answer(haproxy):
    url, (a, b), shared = haproxy(cut=True)
    r = httpx.post(f"{url}/v1/pipelines/demo_digits/predict", json={"input": {}}, timeout=30)
    assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable", r.text[:300]
    with pytest.raises(httpx.RemoteProtocolError):  # not a prediction: passed on as it comes (here: cut)
        httpx.get(f"{url}/v1/runs", timeout=30)


def test_a_loopback_host_is_refused_on_a_cluster_of_several_machines():
    from workbench.scale import ScaleError
    from workbench.scale.haproxy import check_host

    check_host("127.0.0.1", ["192.0.2.2", "192.0.2.2"])  # the nodes of one machine (tests/scale's cluster)
    check_host("0.0.0.0", ["10.0.0.1", "10.0.0.2"])
    with pytest.raises(ScaleError, match=r"--host 127\.0\.0\.1.*2 machines.*--host 0\.0\.0\.0"):
        check_host("127.0.0.1", ["10.0.0.1", "10.0.0.2"])
