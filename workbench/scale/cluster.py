"""Joining or starting a Ray cluster, and checking that its replicas can share the run store."""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.config import Settings, get_settings

from . import ScaleError, require_ray

log = logging.getLogger("workbench.scale")


@dataclass
class Cluster:
    """A connection of this process to a Ray cluster (`connect`).

    Attributes:
        address: what was asked for (`local`, `auto`, `ray://host:port`, `host:port`).
        started: True when `connect` started a local Ray instance (`shutdown` stops it).
        settings: the settings every replica and Ray Data worker is given (their database URL included).
    """

    address: str
    started: bool
    settings: Settings
    serving: bool = False  # set by `deploy`: `shutdown` removes the Serve applications
    # signs the run ids the Serve proxy's middleware gives requests (workbench.scale.proxy)
    proxy_token: str = field(default_factory=lambda: secrets.token_hex(16), repr=False)

    def nodes(self) -> list[dict[str, Any]]:
        """The alive nodes: `[{"node_id", "address", "cpus", "gpus"}]`."""
        ray = require_ray()
        return [
            {
                "node_id": n["NodeID"],
                "address": n.get("NodeManagerAddress"),
                "cpus": n.get("Resources", {}).get("CPU", 0.0),
                "gpus": n.get("Resources", {}).get("GPU", 0.0),
            }
            for n in ray.nodes()
            if n.get("Alive")
        ]

    def gpus(self) -> int:
        """GPUs in the whole cluster (whole devices)."""
        return int(sum(n["gpus"] for n in self.nodes()))

    def shutdown(self) -> None:
        """Stop Ray Serve applications this process deployed and disconnect (a local instance stops)."""
        ray = require_ray()
        if not ray.is_initialized():
            return
        try:
            from ray import serve

            if self.serving:
                serve.shutdown()
        except Exception:  # nothing deployed, or the cluster is gone
            log.debug("serve.shutdown failed", exc_info=True)
        ray.shutdown()


def connect(
    address: str = "local",
    *,
    settings: Settings | None = None,
    num_cpus: int | None = None,
    log_dir: str | Path | None = None,
) -> Cluster:
    """Start a local Ray instance (`address="local"`) or join a running cluster (`"auto"`, `"ray://host:port"`,
    `"host:port"`), then check that the run store can be shared (`check_store`).

    Args:
        settings: default `get_settings()`; `settings.ray.object_store_memory` sizes a local instance.
        num_cpus: CPUs of a local instance (default: the machine's).
        log_dir: Ray's session and log folder for a local instance (default Ray's, /tmp/ray).

    Raises:
        RayNotInstalledError: the `ray` extra is missing (the message says how to install it).
        ScaleError: a bad address, a cluster that cannot be reached, or a store it cannot share.
    """
    ray = require_ray()
    settings = settings or get_settings()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage reports sent from here or the workers
    os.environ.setdefault("RAY_DATA_USAGE_DISABLED", "1")
    if not address or not (address in ("local", "auto") or address.startswith("ray://") or ":" in address):
        raise ScaleError(f"--ray {address!r}: expected local, auto, ray://HOST:PORT or HOST:PORT (a GCS address)")
    if ray.is_initialized():
        cluster = Cluster(address, started=False, settings=settings)
    else:
        kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": False}
        if address == "local":
            kwargs["num_cpus"] = num_cpus
            kwargs["object_store_memory"] = settings.ray.object_store_memory
            if log_dir is not None:
                kwargs["_temp_dir"] = str(Path(log_dir).resolve())
        else:
            kwargs = {"address": address, "logging_level": logging.WARNING, "log_to_driver": False}
        try:
            ray.init(**kwargs)
        except Exception as exc:  # ray.init raises bare Exception for a node that does not start in time
            what = "cannot start a local Ray instance" if address == "local" else "cannot reach the Ray cluster"
            raise ScaleError(f"--ray {address}: {what}: {exc}") from None
        cluster = Cluster(address, started=address == "local", settings=settings)
    try:
        check_store(settings.database_url, len(cluster.nodes()))
    except ScaleError:
        if cluster.started:
            ray.shutdown()
        raise
    return cluster


def check_store(database_url: str, nodes: int) -> None:
    """Refuse a run store that the replicas of a cluster of `nodes` nodes cannot share.

    Every replica and Ray Data worker records its runs in the one database of `WORKBENCH_DATABASE_URL`.
    A SQLite file is shared only by processes of one machine; an in-memory SQLite database by none.

    Raises:
        ScaleError: naming the URL and what to use instead.
    """
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        return
    shown = database_url if url.password is None else url.render_as_string(hide_password=True)  # as written
    if not url.database or url.database == ":memory:":
        raise ScaleError(
            f"WORKBENCH_DATABASE_URL={shown} is an in-memory SQLite database, which each Ray replica would have "
            "for itself: use a SQLite file (one node) or PostgreSQL (postgresql+psycopg://USER@HOST/DB)"
        )
    if nodes > 1:
        raise ScaleError(
            f"WORKBENCH_DATABASE_URL={shown} is a SQLite file, but the Ray cluster has {nodes} nodes: replicas on "
            "other machines cannot write to it. Set WORKBENCH_DATABASE_URL to a server database every node "
            "reaches, e.g. postgresql+psycopg://USER:PASSWORD@HOST:5432/DB (docs/scaling.md)"
        )


def where_am_i(replica: str | None = None) -> str:
    """`node <12 hex> replica <id>` for this Ray worker (the `served_by` of its runs)."""
    ray = require_ray()
    node = ray.get_runtime_context().get_node_id()[:12]
    if replica is None:
        replica = f"worker {ray.get_runtime_context().get_worker_id()[:12]}"
    return f"node {node} {replica}"
