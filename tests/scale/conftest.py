"""A real two-node Ray cluster on this machine (`ray.cluster_utils.Cluster`: two nodes of one CPU each)
and a throw-away PostgreSQL (started from the machine's binaries as tests/workbench/test_store_postgres.py
does) as the one store of every replica. Module-scoped: the cluster starts once for tests/scale.

Kept small for CI: 80 MiB object store per node, no dashboard, Ray's logs in a temporary folder.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

OBJECT_STORE_BYTES = 80 * 1024 * 1024


def _find_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    from workbench.store import Store

    initdb, pg_ctl = _find_bin("initdb"), _find_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) on this machine")
    pytest.importorskip("psycopg")
    base = Path(tempfile.mkdtemp(prefix="workbench-scale-pg-"))  # postgres runs as another user: not pytest's tmp
    data = base / "data"
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
        os.chmod(base, 0o777)
    port = free_port()
    subprocess.run(
        [*prefix, initdb, "-D", str(data), "-U", "wb", "--auth=trust", "-E", "UTF8"], check=True, capture_output=True
    )
    log = base / "log.txt"
    if prefix:
        log.touch()
        shutil.chown(log, "postgres")
    opts = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c max_connections=200"
    subprocess.run(
        [*prefix, pg_ctl, "-D", str(data), "-l", str(log), "-w", "-o", opts, "start"], check=True, capture_output=True
    )
    try:
        url = f"postgresql+psycopg://wb@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + 30
        while True:
            try:
                Store.open(url).close()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield url
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "fast", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_cluster(postgres_url):
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
        settings = Settings(database_url=postgres_url, ray=RaySettings(http_port=free_port(), retries=3))
        cluster = connect(rc.address, settings=settings)
        assert len(cluster.nodes()) == 2
        yield cluster, rc
        cluster.shutdown()
    finally:
        rc.shutdown()
        shutil.rmtree(logs, ignore_errors=True)
