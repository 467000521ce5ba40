"""The HAProxy ingress (`WORKBENCH_RAY__INGRESS=haproxy`: Ray Serve's HAProxy on each node, replicas answering
HTTP themselves, Workbench's rules from `workbench.scale.haproxy`) on the two-node cluster with PostgreSQL
(conftest.py): the guarantees test_multinode.py checks through Serve's Python proxy, here through HAProxy:
the same routes and OpenAPI document; predictions served by replicas on both nodes, each run recorded
exactly once, a client's own run-id headers ignored; a replica killed under load loses no admitted request
silently (HAProxy sends it again under the same run id, or answers 503) and records nothing twice.
"""

from __future__ import annotations

import time

import httpx
import pytest

pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")

from test_multinode import (  # noqa: E402,F401  (collected here again, on this module's HAProxy deployment)
    test_predictions_served_on_both_nodes_each_run_recorded_once,
    test_replica_killed_under_load_loses_nothing_silently_and_records_nothing_twice,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scale_ingress() -> str:
    return "haproxy"


@pytest.fixture(scope="module")
def deployment(ray_cluster):
    from api.app import create_app
    from workbench.scale import deploy

    cluster, _ = ray_cluster
    dep = deploy(cluster, app=create_app, replicas=2, models=[], lms=[], timeout_s=420)
    yield dep
    dep.delete()


def _haproxy_configs(port: int) -> list[str]:
    """Configuration files of the running HAProxy processes (`-f FILE` of their command lines) that listen on
    `port`: one per node."""
    import os

    out = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = [a.decode() for a in f.read().split(b"\0")]
        except OSError:
            continue
        if cmd and cmd[0].endswith("/haproxy") and "-f" in cmd:
            try:
                with open(cmd[cmd.index("-f") + 1]) as f:
                    text = f.read()
            except OSError:
                continue
            if f"bind 127.0.0.1:{port}\n" in text:
                out.append(text)
    return out


def test_haproxy_on_each_node_takes_the_requests_with_the_same_openapi_document(deployment, ray_cluster):
    from api.app import create_app
    from workbench.scale.haproxy import MARK

    cluster, _ = ray_cluster
    with httpx.Client(base_url=deployment.url, timeout=60) as client:
        assert client.get("/readyz").status_code == 200
        served = client.get("/openapi.json").json()
        missing = client.post("/v1/pipelines/nope/predict", json={"input": {}})
    assert served == create_app().openapi()
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"  # the app's own errors
    where = deployment.pipelines_handle().where.remote().result(timeout_s=30)
    assert where["serve_env"]["RAY_SERVE_ENABLE_HA_PROXY"] == "1"
    assert "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH" not in where["serve_env"]  # no Python proxy middleware
    deadline = time.monotonic() + 30  # Ray rewrites a configuration before it starts the HAProxy that reads it
    while True:
        configs = _haproxy_configs(cluster.settings.ray.http_port)
        ok = len(configs) == 2 and all(MARK in c and "SERVE_REPLICA_workbench-pipelines" in c for c in configs)
        if ok or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(configs) == 2, "one HAProxy per node expected"
    assert all(MARK in c and "SERVE_REPLICA_workbench-pipelines" in c for c in configs), configs
