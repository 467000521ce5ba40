"""Scale-out on a Ray cluster: Ray Serve replicas for predictions, Ray Data for batch runs, one store.

    from workbench.scale import connect, deploy, run_dataset

    cluster = connect("local")                       # or "auto", "ray://head:10001"
    deploy(cluster, replicas=2, app=api.app.create_app)   # the REST API on Ray Serve
    results = run_dataset("demo_digits", inputs, cluster=cluster)

Ray is an optional extra (`uv sync --extra ray`, or `pip install 'workbench[ray]'`) and is imported
only here, only when one of these is called; without it they raise `RayNotInstalledError`, which says
how to install it. docs/scaling.md explains the deployments, the store's role and the limits.
"""

from __future__ import annotations

from typing import Any

INSTALL_HINT = (
    "Ray is not installed: it is the optional extra `ray` (install it with `uv sync --extra ray`, "
    "`bash scripts/bootstrap.sh`, or `pip install 'workbench[ray]'`)"
)


class ScaleError(Exception):
    """Scale-out cannot start (no Ray, a store the cluster cannot share, a bad address)."""


class StartupFailedError(RuntimeError):
    """A deployed application did not start: a replica's start-up loading failed (a catalogue model that
    does not load, a broken knowledge base) and Ray Serve gave up after its retries. The message names
    each failed deployment and the reason its replica gave, one line."""


class RayNotInstalledError(ScaleError, ImportError):
    """`--ray` / `ray=` was asked for but the `ray` package (with its serve and data parts) is missing."""


def require_ray() -> Any:
    """Import and return the `ray` module (with `ray.serve` and `ray.data` importable).

    Raises:
        RayNotInstalledError: Ray or one of its parts is missing; the message says how to install it.
    """
    try:
        import ray
        import ray.data  # noqa: F401
        import ray.serve  # noqa: F401
    except ImportError as exc:
        raise RayNotInstalledError(f"{INSTALL_HINT} ({exc})") from None
    return ray


_LAZY = {
    "Cluster": "workbench.scale.cluster",
    "connect": "workbench.scale.cluster",
    "check_store": "workbench.scale.cluster",
    "deploy": "workbench.scale.serve_app",
    "Deployment": "workbench.scale.serve_app",
    "run_dataset": "workbench.scale.data",
}


def __getattr__(name: str) -> Any:  # the submodules import ray: only when used
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench.scale' has no attribute {name!r}")
    import importlib

    if name != "check_store":
        require_ray()  # RayNotInstalledError (says how to install it) rather than a bare ImportError
    return getattr(importlib.import_module(module), name)


__all__ = ["INSTALL_HINT", "RayNotInstalledError", "ScaleError", "StartupFailedError", "require_ray", *_LAZY]
