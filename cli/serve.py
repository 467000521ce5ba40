"""`workbench serve [--model DIR [--model-name NAME]]... [--host H] [--port P] [--workers N]`: the REST API.

`--port 0` serves on a port the system picks: `serve` binds it before anything else and the first
line it prints (`workbench serve: http://HOST:PORT ...`) names it, so a script or test that starts a
server learns its address without choosing a free port first (another process could take that one
before the server binds it).

`--model DIR` (repeatable) serves a Hugging Face folder: a causal LM (Llama, Mistral, Qwen2,
GPT-2 families) on `/v1` (OpenAI-compatible) and `/v2/models/NAME/generate`, any other folder
the loaders support on `/v2/models/NAME/infer`; the name defaults to the folder's name. With
`--model`, only those folders load at start-up (catalogue models load on first use) and the demo
LM is not served on /v1 unless named too.

Defaults come from the settings (`WORKBENCH_SERVER__HOST`, `..._PORT`, `..._WORKERS`). Each
worker is a separate process with its own models, batchers and generation engine; use one worker
per accelerator. With more than one worker, `/metrics` of any worker reports the whole server:
`serve` points `PROMETHEUS_MULTIPROC_DIR` at a folder (the variable's value if set, else a new
temporary folder), empties it of old metric files before the workers start, and each worker
writes its values there (prometheus-client's multiprocess mode). uvicorn imports the app by the
name `cli.serve:create_app` (a factory: each worker process builds its own), which this module
takes from `api.app`.

A start-up loading failure (a catalogue model that does not load, a broken knowledge base) stops
the server with one line naming the reason and exit status 1, as Triton's `--exit-on-error` does
by default; `--no-exit-on-error` (setting `WORKBENCH_SERVER__EXIT_ON_ERROR=false`) keeps the
process up with `/readyz` answering 503 `failed`, as before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

MODELS_ENV = "WORKBENCH_SERVE_MODELS"  # JSON [[name, folder], ...] handed to each worker process
# JSON {"pid": serve's process, "file": where a worker writes why start-up loading failed}
STARTUP_REPORT_ENV = "WORKBENCH_SERVE_STARTUP_REPORT"


def serve(
    host: Annotated[
        str | None, typer.Option("--host", help="Interface to bind (default: settings, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            help="TCP port (default: settings, 8000); 0: one the system picks, named on the first line printed.",
        ),
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Worker processes (default: settings, 1).")
    ] = None,
    log_level: Annotated[
        str, typer.Option("--log-level", help="uvicorn log level: critical|error|warning|info|debug.")
    ] = "info",
    model: Annotated[
        list[Path] | None,
        typer.Option("--model", help="A Hugging Face model folder to serve (repeatable)."),
    ] = None,
    model_name: Annotated[
        list[str] | None,
        typer.Option("--model-name", help="Served name of the --model at the same position (default: folder name)."),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Serve on a Ray cluster (Ray Serve replicas; docs/scaling.md): local, auto or ray://HOST:PORT.",
        ),
    ] = None,
    replicas: Annotated[
        int | None,
        typer.Option("--replicas", min=1, help="With --ray: pipeline replicas (default: settings, WORKBENCH_RAY__*)."),
    ] = None,
    exit_on_error: Annotated[
        bool | None,
        typer.Option(
            "--exit-on-error/--no-exit-on-error",
            help="Exit (status 1) when start-up loading fails, as Triton does; --no-exit-on-error keeps serving with "
            "/readyz 'failed' (default: settings, WORKBENCH_SERVER__EXIT_ON_ERROR, true). With --ray the server "
            "always exits on a start-up error; --no-exit-on-error is refused (exit 2).",
        ),
    ] = None,
) -> None:
    """Serve the REST API (pipelines, knowledge bases, KServe v2 inference, OpenAI-compatible generation).

    Docs at http://HOST:PORT/docs; readiness at /readyz (200 once models are loaded).
    """
    if ray is not None:
        if port == 0:
            typer.echo("workbench serve: --port 0 is not supported with --ray (give a port)", err=True)
            raise typer.Exit(2)
        if workers:
            typer.echo("workbench serve: --ray cannot be combined with --workers (use --replicas)", err=True)
            raise typer.Exit(2)
        from .serve_ray import ray_generation_folders, serve_on_ray

        generation = ray_generation_folders(model or [], model_name or [])
        serve_on_ray(ray, replicas, host, port, "serve", generation, exit_on_error=exit_on_error)
        return
    if replicas is not None:
        typer.echo("workbench serve: --replicas needs --ray ADDRESS", err=True)
        raise typer.Exit(2)
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
    try:
        models = resolve_models(model or [], model_name or [])
    except ValueError as exc:
        typer.echo(f"workbench serve: {exc}", err=True)
        raise typer.Exit(2) from None
    if models:
        os.environ[MODELS_ENV] = json.dumps(models)
    host = host or settings.server.host
    port = settings.server.port if port is None else port
    workers = workers or settings.server.workers
    problem = port_problem(host, port) if port else None
    if problem:  # before the banner and before uvicorn (whose failed start prints the libraries' exit noise)
        typer.echo(f"workbench serve: cannot listen on {host}:{port}: {problem}", err=True)
        raise typer.Exit(3)
    problem = store_problem(settings.database_url)
    if problem:  # else the server starts, logs the start-up failure and answers 503 to everything
        typer.echo(f"workbench serve: {problem}", err=True)
        raise typer.Exit(2)
    listener = None
    if port == 0:  # bound here and handed to uvicorn: the port printed is the one served, no one can take it first
        listener, problem = listen_on_any_port(host)
        if listener is None:
            typer.echo(f"workbench serve: cannot listen on {host}:0: {problem}", err=True)
            raise typer.Exit(3)
        port = listener.getsockname()[1]
    made = setup_multiprocess_metrics() if workers > 1 else None
    exit_on_error = settings.server.exit_on_error if exit_on_error is None else exit_on_error
    os.environ.pop(STARTUP_REPORT_ENV, None)
    report = startup_report_file() if exit_on_error else None
    typer.echo(
        f"workbench serve: http://{host}:{port} ({workers} worker{'s' if workers > 1 else ''}); docs at /docs", err=True
    )
    try:
        uvicorn.run(
            "cli.serve:create_app",  # this module's import of api.app (the composition root sees every room)
            factory=True,
            host=host,
            port=port,
            fd=None if listener is None else listener.fileno(),  # uvicorn's --fd: serve the socket bound above
            workers=workers,
            log_level=log_level,
            log_config=log_config(log_level),
            timeout_graceful_shutdown=10,
            **uvicorn_options(settings),
        )
    except KeyboardInterrupt:  # one worker: uvicorn re-raises the SIGINT the failed start-up sent after shutting down
        if report is None or not report.read_text(encoding="utf-8"):
            raise
    finally:
        if listener is not None:
            listener.close()
        if made is not None:
            import shutil

            shutil.rmtree(made, ignore_errors=True)
    if report is not None:
        reason = report.read_text(encoding="utf-8")
        report.unlink(missing_ok=True)
        if reason:
            typer.echo(
                f"workbench serve: start-up loading failed, server stopped (--no-exit-on-error keeps it up): {reason}",
                err=True,
            )
            raise typer.Exit(1)


def startup_report_file() -> Path:
    """An empty file where a worker whose start-up loading fails writes why; named, with this process's id
    (the one to stop), by `WORKBENCH_SERVE_STARTUP_REPORT` for the worker processes."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix="workbench-serve-", suffix=".startup")
    os.close(fd)
    os.environ[STARTUP_REPORT_ENV] = json.dumps({"pid": os.getpid(), "file": path})
    return Path(path)


def exit_on_startup_failure(app, pid: int, file: str) -> None:
    """Wrap `app`'s lifespan: once start-up loading (`app.state.serving`, in the background) has
    failed, write the reason (one line) to `file` and send SIGINT to `pid`, the `workbench serve`
    process: uvicorn (one worker) or its supervisor (several) then shuts every worker down cleanly."""
    import asyncio
    import contextlib
    import math
    import signal

    from workbench.serving.errors import UnavailableError

    serving = app.state.serving
    inner = app.router.lifespan_context

    async def watch() -> None:
        try:
            await serving.wait_ready(timeout_s=math.inf)
        except UnavailableError:
            reason = " ".join(str(serving.readiness().get("error") or "unknown error").split())
            Path(file).write_text(reason, encoding="utf-8")
            os.kill(pid, signal.SIGINT)

    @contextlib.asynccontextmanager
    async def lifespan(app_):
        async with inner(app_) as state:
            task = asyncio.create_task(watch())
            try:
                yield state
            finally:
                task.cancel()

    app.router.lifespan_context = lifespan


def port_problem(host: str, port: int) -> str | None:
    """Why `host:port` cannot be listened on (address in use, no such address, permission), or None.

    Binds a socket as uvicorn does (SO_REUSEADDR, so a port in TIME_WAIT is free) and closes it; a
    server that takes the port in between is still reported by uvicorn."""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot resolve the host ({exc.strerror})"
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "address already in use (another server is listening there; choose another --port)"
            return exc.strerror or str(exc)
    return None


def listen_on_any_port(host: str):
    """A listening TCP socket on `host` and a port the system picks (`--port 0`), and None; or None and
    why it cannot be made (as `port_problem`). TCP_NODELAY is set on it for the connections it accepts
    (Linux copies it to them; uvicorn's `fd` socket is not known to asyncio as TCP, which sets it otherwise)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return None, f"cannot resolve the host ({exc.strerror})"
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(addr)
        sock.listen(2048)  # uvicorn's default backlog
    except OSError as exc:
        sock.close()
        return None, exc.strerror or str(exc)
    return sock, None


def store_problem(url: str) -> str | None:
    """Why the store at `url` cannot be used (not a database, unreachable, a folder that cannot be
    made), or None. Reads the schema revision only: migrations run when the server starts, as before."""
    from workbench.store.database import StoreError, create_store_engine, current_revision

    try:
        engine = create_store_engine(url)
    except StoreError as exc:
        return str(exc)
    except Exception as exc:  # a URL SQLAlchemy cannot use (unknown dialect, missing driver)
        return f"database {url}: {type(exc).__name__}: {exc}"
    try:
        current_revision(engine)
    except StoreError as exc:
        return str(exc)
    finally:
        engine.dispose()
    return None


def uvicorn_options(settings) -> dict[str, object]:
    """The uvicorn options `workbench serve` takes from the settings (also used by `bench api`'s
    server, so that the benchmark measures what `serve` runs).

    `loop`: `settings.server.loop`, "asyncio" by default. uvloop (uvicorn's choice when installed)
    accepts one connection per event-loop iteration (libuv >= 1.45): under 3x overload, with the run
    pool's threads sharing the GIL, an iteration took ~0.1 s, so ~1,700 connections waited in the
    kernel's accept queue for 20-30 s (strace: one `accept4` per `epoll_pwait`; `ss -ltn`: the listen
    queue drained at ~12 connections/s), where admission control cannot see them. asyncio's loop
    accepts up to `backlog` connections per readiness. docs/serving.md, Overload.
    """
    return {"loop": settings.server.loop}


# the packages whose loggers `serve` shows, at its --log-level, beside uvicorn's
_OUR_LOGGERS = ("api", "workbench", "chaining", "neural", "rules")


def log_config(log_level: str) -> dict[str, object]:
    """uvicorn's logging configuration, with the project's loggers added at `log_level` ("info", ...) on
    uvicorn's standard-error handler. Without them, Python's last-resort handler showed only warnings, so
    the INFO lines docs/api.md promises (an evaluation cancelled by its caller) never appeared (n16)."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    for name in _OUR_LOGGERS:
        config["loggers"][name] = {"handlers": ["default"], "level": log_level.upper(), "propagate": False}
    return config


def setup_multiprocess_metrics() -> str | None:
    """Point `PROMETHEUS_MULTIPROC_DIR` at a folder for the workers' metric files and remove old
    `*.db` files from it (values of an earlier server must not leak into this one's counters).

    Returns the folder when this call created it (removed again when the server stops), else None.
    Raises typer.Exit(2) when the folder named by the variable is not a writable directory."""
    import tempfile

    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    made = None
    if not path:
        path = made = tempfile.mkdtemp(prefix="workbench-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.db"):
            old.unlink()
    except OSError as exc:
        typer.echo(f"workbench serve: PROMETHEUS_MULTIPROC_DIR={path}: {exc}", err=True)
        raise typer.Exit(2) from None
    return made


def create_app():
    """Build the REST API app (uvicorn's factory, imported by name in each worker process).

    Returns:
        fastapi.FastAPI: `api.app.create_app()` with the current settings.
    """
    app = _build_app()
    report = os.environ.get(STARTUP_REPORT_ENV)
    if report:
        spec = json.loads(report)
        exit_on_startup_failure(app, int(spec["pid"]), spec["file"])
    return app


def _build_app():
    from api.app import create_app as build

    models = json.loads(os.environ.get(MODELS_ENV) or "[]")
    if not models:
        return build()
    from workbench.config import get_settings
    from workbench.serving import Serving

    def load(serving: Serving) -> None:
        for name, folder in models:
            serving.serve_folder(folder, name)

    settings = get_settings()
    serving = Serving(settings=settings, serve_demo_lm=False, load_models=False, load=load)
    return build(serving=serving, settings=settings)


def resolve_models(folders: list[Path], names: list[str]) -> list[list[str]]:
    """`[[name, absolute folder]]` for `--model`/`--model-name`. Raises ValueError naming the bad option."""
    from neural.generation.model_config import SUPPORTED, is_causal_lm

    if len(names) > len(folders):
        raise ValueError(f"{len(names)} --model-name for {len(folders)} --model; give one name per folder at most")
    out: list[list[str]] = []
    for i, folder in enumerate(folders):
        if not (folder / "config.json").is_file():
            raise ValueError(f"--model {folder}: not a Hugging Face model folder (no config.json)")
        cfg = json.loads((folder / "config.json").read_text())
        archs = cfg.get("architectures") or []
        if not is_causal_lm(folder) and any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
            raise ValueError(
                f"--model {folder}: model_type {cfg.get('model_type')!r} is not supported by the generation "
                f"engine; supported: {', '.join(sorted(SUPPORTED))}"
            )
        name = names[i] if i < len(names) else folder.resolve().name
        if any(name == n for n, _ in out):
            raise ValueError(f"--model {folder}: the name {name!r} is served twice; give --model-name")
        out.append([name, str(folder.resolve())])
    return out


def register(app: typer.Typer) -> None:
    """Mount `workbench serve` on the root CLI."""
    app.command("serve")(serve)
