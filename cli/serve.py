"""`workbench serve [--host H] [--port P] [--workers N]`: the REST API under uvicorn.

Defaults come from the settings (`WORKBENCH_SERVER__HOST`, `..._PORT`, `..._WORKERS`). Each
worker is a separate process with its own models, batchers and generation engine (and its own
`/metrics`); use one worker per accelerator. uvicorn imports the app by the name `cli.serve:create_app`
(a factory: each worker process builds its own), which this module takes from `api.app`.
"""

from __future__ import annotations

from typing import Annotated

import typer


def serve(
    host: Annotated[
        str | None, typer.Option("--host", help="Interface to bind (default: settings, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", min=1, max=65535, help="TCP port (default: settings, 8000).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Worker processes (default: settings, 1).")
    ] = None,
    log_level: Annotated[
        str, typer.Option("--log-level", help="uvicorn log level: critical|error|warning|info|debug.")
    ] = "info",
) -> None:
    """Serve the REST API (pipelines, knowledge bases, KServe v2 inference, OpenAI-compatible generation).

    Docs at http://HOST:PORT/docs; readiness at /readyz (200 once models are loaded).
    """
    import uvicorn

    from workbench.config import ConfigError, get_settings

    try:
        settings = get_settings()
    except ConfigError as exc:
        typer.echo(f"workbench serve: {exc}", err=True)
        raise typer.Exit(2) from None
    if log_level not in ("critical", "error", "warning", "info", "debug"):
        typer.echo(
            f"workbench serve: --log-level {log_level!r}: expected critical, error, warning, info or debug", err=True
        )
        raise typer.Exit(2)
    host = host or settings.server.host
    port = port or settings.server.port
    workers = workers or settings.server.workers
    typer.echo(
        f"workbench serve: http://{host}:{port} ({workers} worker{'s' if workers > 1 else ''}); docs at /docs", err=True
    )
    uvicorn.run(
        "cli.serve:create_app",  # this module's import of api.app (the composition root sees every room)
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        timeout_graceful_shutdown=10,
    )


def create_app():
    """Build the REST API app (uvicorn's factory, imported by name in each worker process).

    Returns:
        fastapi.FastAPI: `api.app.create_app()` with the current settings.
    """
    from api.app import create_app as build

    return build()


def register(app: typer.Typer) -> None:
    """Mount `workbench serve` on the root CLI."""
    app.command("serve")(serve)
