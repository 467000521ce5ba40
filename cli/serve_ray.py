"""`workbench serve --ray ADDRESS [--replicas N]`: the REST API as a Ray Serve application.

`local` starts a Ray instance on this machine; `auto` joins the cluster this machine belongs to;
`ray://HOST:PORT` (Ray Client) or `HOST:PORT` (the head's GCS) joins a remote one. The application's
HTTP proxy listens on --host/--port. Ctrl-C removes the application (and stops a local instance).
docs/scaling.md.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import typer


def ray_generation_folders(folders: list[Path], names: list[str]) -> dict[str, str]:
    """`{name: folder}` of `serve --ray --model DIR [--model-name N]`: causal LMs for the generation
    deployment. Exits 2 naming a bad option or a folder that is not a causal LM (other models are served
    from the catalogue on Ray)."""
    from neural.generation.model_config import is_causal_lm

    from .serve import resolve_models

    try:
        models = resolve_models(folders, names)
    except ValueError as exc:
        typer.echo(f"workbench serve: {exc}", err=True)
        raise typer.Exit(2) from None
    for _name, folder in models:
        if not is_causal_lm(Path(folder)):
            typer.echo(
                f"workbench serve --ray: --model {folder}: not a causal LM; with --ray, --model serves causal LMs "
                "on the generation deployment (other models: add them to the catalogue, `workbench model add`)",
                err=True,
            )
            raise typer.Exit(2)
    return {name: folder for name, folder in models}


def serve_on_ray(
    address: str,
    replicas: int | None,
    host: str | None,
    port: int | None,
    batching: str,
    generation: dict[str, str] | None = None,
    exit_on_error: bool | None = None,
) -> None:
    """Deploy on Ray and block until interrupted. `generation`: `{name: folder}` of more causal LMs for the
    generation deployment. `exit_on_error`: `serve`'s `--exit-on-error/--no-exit-on-error` (None: the
    setting). Exits 2 on a bad address, a missing `ray` extra, a store the cluster cannot share, or when
    exit-on-error is off (`refuse_no_exit_on_error`); exits 1 naming the reason when the deployment fails to
    start (start-up loading failed in a replica), as `serve` does."""
    from workbench.config import ConfigError, get_settings
    from workbench.scale import ScaleError

    try:
        settings = get_settings()
    except ConfigError as exc:
        typer.echo(f"workbench serve: {exc}", err=True)
        raise typer.Exit(2) from None
    refuse_no_exit_on_error(exit_on_error, settings.server.exit_on_error)
    ray_settings = settings.ray.model_copy(
        update={"http_host": host or settings.server.host, "http_port": port or settings.server.port}
    )
    settings = settings.model_copy(update={"ray": ray_settings})
    try:
        from api.app import create_app
        from workbench.scale import StartupFailedError, connect, deploy

        cluster = connect(address, settings=settings)
    except ScaleError as exc:
        typer.echo(f"workbench serve --ray: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        nodes = cluster.nodes()
        typer.echo(
            f"workbench serve --ray {address}: {len(nodes)} node{'s' if len(nodes) != 1 else ''}, "
            f"{sum(n['cpus'] for n in nodes):g} CPUs, {sum(n['gpus'] for n in nodes):g} GPUs; deploying "
            f"({replicas or settings.ray.replicas if not settings.ray.autoscale or replicas else 'autoscaled'} "
            "pipeline replicas)...",
            err=True,
        )
        try:
            dep = deploy(cluster, app=create_app, replicas=replicas, batching=batching, generation=generation)
        except StartupFailedError as exc:
            typer.echo(f"workbench serve --ray: start-up loading failed, server stopped: {exc}", err=True)
            raise typer.Exit(1) from None
        except (ScaleError, RuntimeError, TimeoutError, ValueError) as exc:
            typer.echo(f"workbench serve --ray: {exc}", err=True)
            raise typer.Exit(1) from None
        typer.echo(
            f"workbench serve --ray: {dep.url} (Ray Serve: {dep.replicas or 'autoscaled'} replicas of the API "
            f"running pipelines, model deployments {', '.join(dep.models) or 'none'}, generation deployment "
            f"{', '.join(dep.lms) or 'none'}); docs at /docs; Ctrl-C stops",
            err=True,
        )
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
        typer.echo("workbench serve --ray: stopping", err=True)
    finally:
        cluster.shutdown()


def refuse_no_exit_on_error(flag: bool | None, setting: bool) -> None:
    """Exit 2 when `serve --ray` is asked to keep serving after a failed start-up (`--no-exit-on-error`, or
    `WORKBENCH_SERVER__EXIT_ON_ERROR=false` without `--exit-on-error`): Ray Serve replaces a replica whose
    start-up fails and, after its retries, marks the application failed and routes nothing to it, so there is
    no server left to answer `/readyz` 'failed'. `serve --ray` always stops (exit 1) naming the reason."""
    if flag is None and setting:
        return
    if flag:
        return
    source = "--no-exit-on-error" if flag is False else "WORKBENCH_SERVER__EXIT_ON_ERROR=false (the settings)"
    typer.echo(
        f"workbench serve --ray: {source} is not supported with --ray: Ray Serve retries a replica whose start-up "
        "loading fails, then marks the application failed, so there is no server left to answer /readyz; "
        "`serve --ray` stops with exit status 1 naming the reason"
        + (" (pass --exit-on-error to override the setting)" if flag is None else ""),
        err=True,
    )
    raise typer.Exit(2)


def app_builder(args: dict) -> object:
    """Ray Serve application builder for a Serve config (`import_path: cli.serve_ray:app_builder`, e.g.
    KubeRay's RayService `serveConfigV2`): the application `workbench serve --ray` deploys, with the
    settings of the process that builds it (`WORKBENCH_*`) and `args` `{"replicas": N, "batching": ...,
    "generation": {name: causal LM folder}}` (the catalogue's causal LMs are served in any case). The
    proxies retry requests whose replica was lost when every pod sets `WORKBENCH_RAY_PROXY_TOKEN` and
    `RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=workbench.scale.proxy:middlewares` (docs/scaling.md).

    Raises ScaleError when the store cannot be shared by the cluster's nodes (a SQLite file on many nodes)."""
    import os

    import ray

    from api.app import create_app
    from workbench.config import get_settings
    from workbench.scale import check_store
    from workbench.scale.proxy import TOKEN_ENV
    from workbench.scale.serve_app import build_application

    settings = get_settings()
    check_store(settings.database_url, len([n for n in ray.nodes() if n.get("Alive")]))
    replicas = args.get("replicas")
    return build_application(
        settings,
        app=create_app,
        replicas=int(replicas) if replicas is not None else None,
        batching=str(args.get("batching", "serve")),
        generation=dict(args.get("generation") or {}),
        proxy_token=os.environ.get(TOKEN_ENV),  # the proxies' token when the pods set it (docs/scaling.md)
    )
