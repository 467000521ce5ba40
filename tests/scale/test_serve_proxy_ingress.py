"""The `serve_proxy` ingress (`WORKBENCH_RAY__INGRESS=serve_proxy`: Serve's Python HTTP proxy on each node with
the middleware of `workbench.scale.proxy`) on the two-node cluster with PostgreSQL (conftest.py): the guarantees
test_multinode.py checks through the default ingress (HAProxy), here through Serve's proxy: predictions served
by replicas on both nodes, each run recorded exactly once, a client's own run-id headers ignored; a replica
killed under load loses no admitted request silently (sent again under the same run id, or a 503) and records
nothing twice. (`WB_SCALE_INGRESS=serve_proxy` runs all of tests/scale with it.)
"""

from __future__ import annotations

import pytest

pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")

from test_multinode import (  # noqa: E402,F401  (collected here again, on this module's deployment)
    test_predictions_served_on_both_nodes_each_run_recorded_once,
    test_replica_killed_under_load_loses_nothing_silently_and_records_nothing_twice,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scale_ingress() -> str:
    return "serve_proxy"


@pytest.fixture(scope="module")
def deployment(ray_cluster):
    from api.app import create_app
    from workbench.scale import deploy

    cluster, _ = ray_cluster
    dep = deploy(cluster, app=create_app, replicas=2, models=[], lms=[], timeout_s=420)
    yield dep
    dep.delete()
