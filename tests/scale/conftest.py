"""A real two-node Ray cluster on this machine (`ray.cluster_utils.Cluster`: two nodes of one CPU each)
and a throw-away PostgreSQL (started from the machine's binaries as tests/workbench/test_store_postgres.py
does) as the one store of every replica. Module-scoped: the cluster starts once for tests/scale.

Kept small for CI: 80 MiB object store per node, no dashboard, Ray's logs in a temporary folder (deleted
afterwards; `WB_KEEP_RAY_LOGS=1` keeps it and prints where: the proxy's and replicas' logs under
`session_latest/logs/serve/` name each request by its `x-request-id`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from postgres_server import free_port, throwaway_postgres

OBJECT_STORE_BYTES = 80 * 1024 * 1024


@pytest.fixture(scope="module")
def postgres_url():
    with throwaway_postgres("workbench-scale-pg-", max_connections=200) as url:
        yield url


@pytest.fixture(scope="module")
def scale_ingress() -> str:
    """The ingress of the module's deployments: `WB_SCALE_INGRESS` (`serve_proxy` or `haproxy`: run tests/scale
    with either), else the settings' default (`haproxy`); test_serve_proxy_ingress.py asks for `serve_proxy`."""
    from workbench.config import RaySettings

    return os.environ.get("WB_SCALE_INGRESS") or RaySettings().ingress


@pytest.fixture(scope="module")
def ray_cluster(postgres_url, scale_ingress):
    """`(workbench.scale.Cluster, ray.cluster_utils.Cluster)`: two nodes of one CPU, the driver connected."""
    pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")
    from ray.cluster_utils import Cluster as RayCluster

    from workbench.config import RaySettings, Settings
    from workbench.scale import connect

    logs = Path(tempfile.mkdtemp(prefix="wb-ray-"))  # short: Ray's socket paths must stay under 107 bytes
    head_args = {
        "num_cpus": 1,
        "object_store_memory": OBJECT_STORE_BYTES,
        "include_dashboard": False,
        "temp_dir": str(logs),
    }
    rc = RayCluster(initialize_head=True, head_node_args=head_args)
    try:
        rc.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
        rc.wait_for_nodes(timeout=120)
        settings = Settings(
            database_url=postgres_url,
            ray=RaySettings(
                http_port=free_port(),
                retries=3,
                ingress=scale_ingress,
                # variables Ray ignores, to see that both settings reach the replicas' processes
                serve_env={"RAY_SERVE_WORKBENCH_TEST_SERVE": "1"},
                pipelines_env={"RAY_SERVE_WORKBENCH_TEST_PIPELINES": "1"},
            ),
        )
        cluster = connect(rc.address, settings=settings)
        assert len(cluster.nodes()) == 2
        yield cluster, rc
        cluster.shutdown()
    finally:
        rc.shutdown()
        if os.environ.get("WB_KEEP_RAY_LOGS"):
            print(f"Ray logs kept in {logs}")
        else:
            shutil.rmtree(logs, ignore_errors=True)
