"""Fixtures for the TUI tests: a copy of the fixture workspace, a real Workbench over it, helpers."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SIZE = (80, 24)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A writable copy of tests/tui/fixtures: knowledge_bases/ and pipelines/."""
    target = tmp_path / "ws"
    shutil.copytree(FIXTURES, target)
    return target


@pytest.fixture
def workbench(workspace: Path):
    """A real `Workbench` over the workspace, with the per-test SQLite store from tests/conftest.py."""
    from workbench import Workbench

    wb = Workbench(
        knowledge_base_dir=workspace / "knowledge_bases",
        pipeline_dir=workspace / "pipelines",
        model_catalog=workspace / "catalog.yaml",
    )
    yield wb
    wb.close()


@pytest.fixture
def backend(workbench):
    from tui.inprocess_backend import InProcessBackend

    backend = InProcessBackend(workbench)
    yield backend
    backend.close()  # its consultations' loop thread, then the workbench (closing twice is harmless)


@pytest.fixture
def helpers():
    """`helpers.settle(pilot)` and `helpers.wait_until(pilot, cond)` (fixtures: test modules here are no package)."""
    import types

    return types.SimpleNamespace(settle=settle, wait_until=wait_until, SIZE=SIZE)


async def settle(pilot) -> None:
    """Let pending messages run and every worker finish."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def wait_until(pilot, condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Poll `condition` while the app runs (for workers that wait on the person, e.g. consultations)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.05)
        await asyncio.sleep(0)


@pytest.fixture(autouse=True)
def _svg_ids_from_visible_content(monkeypatch):
    """Snapshots pin what a person sees. Rich names an SVG's CSS classes after a hash of the
    segments' reprs, which include invisible style meta that can differ between runs (seen as a
    flaky history snapshot with identical text and rectangles); use one fixed prefix instead."""
    from rich.console import Console

    original = Console.export_svg

    def export_svg(self, *args, **kwargs):
        kwargs.setdefault("unique_id", "terminal-snapshot")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Console, "export_svg", export_svg)


class LiveServer:
    """`workbench serve`'s app on a real uvicorn server on 127.0.0.1 (free port), in a thread of the
    test process, serving the test's own Workbench."""

    def __init__(self, workbench, port: int | None = None) -> None:
        import socket
        import threading

        import uvicorn

        from api.app import create_app
        from workbench.serving import Serving

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # ours from here on: no other can take it
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a restart may reuse it
        self.sock.bind(("127.0.0.1", port or 0))
        self.port = port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        app = create_app(serving=Serving(workbench, load_models=False, serve_demo_lm=False))
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name=f"uvicorn-{self.port}", daemon=True
        )

    def start(self, timeout_s: float = 60.0) -> LiveServer:
        import httpx

        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        while httpx.get(self.url + "/readyz").status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not become ready")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()  # uvicorn closes it on shutdown; here too when the server never started


@pytest.fixture
def live_server_factory():
    """`make(workbench, port=None)` starts a LiveServer; every one is stopped after the test."""
    started: list[LiveServer] = []

    def make(workbench, port: int | None = None) -> LiveServer:
        server = LiveServer(workbench, port).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def live_server(workbench):
    server = LiveServer(workbench).start()
    yield server
    server.stop()


@pytest.fixture(params=["in-process", "http"])
def any_backend(request, workbench):
    """The contract suite's backend: the facade in this process, or HTTP to a real uvicorn server
    on 127.0.0.1 serving the same Workbench."""
    if request.param == "in-process":
        from tui.inprocess_backend import InProcessBackend

        backend = InProcessBackend(workbench)
        yield backend
        backend.close()
        return
    from tui.http_backend import HttpBackend

    server = LiveServer(workbench).start()
    backend = HttpBackend(server.url, timeout_s=60.0)
    try:
        yield backend
    finally:
        backend.close()
        server.stop()
