"""Helpers of the API tests: a real uvicorn server on 127.0.0.1 (free port) serving `create_app(...)`.

`LiveServer` runs `uvicorn.Server` in a thread of the test process, so a test can drive it with
tritonclient / openai / httpx over TCP and still look inside the runtime (batcher queues, KV blocks).
"""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import torch
import uvicorn

from api.app import create_app
from workbench.config import load_settings
from workbench.serving import Serving

ROOT = Path(__file__).resolve().parents[2]
torch.set_num_threads(1)


SERVE_BANNER = re.compile(r"^workbench serve: (http://\S+) ", re.M)


def served_url(proc: subprocess.Popen, log: Path, timeout_s: float = 180.0) -> str:
    """The URL a `workbench serve --port 0` process writing to `log` serves on: its first line names
    the port it bound (a port found free here and passed on could be taken before the server binds it).
    Raises AssertionError with the log's end when the process exits or prints none in `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = SERVE_BANNER.search(log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"workbench serve named no address (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
        time.sleep(0.05)


def bound_socket() -> socket.socket:
    """A TCP socket bound to 127.0.0.1 on a port the system picks, for `uvicorn.Server.run(sockets=...)`:
    the port stays ours from here on (a port found free, closed and bound again later can be taken in
    between by another process or by an outgoing connection's source port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds its own
    sock.bind(("127.0.0.1", 0))
    return sock


class LiveServer:
    """uvicorn serving `app` on 127.0.0.1:<free port> in a background thread."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sock = bound_socket()
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.host_port = f"127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on", timeout_graceful_shutdown=5
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name=f"uvicorn-{self.port}", daemon=True
        )

    def start(self, ready: bool = True, timeout_s: float = 120.0) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        if ready:
            while httpx.get(self.url + "/readyz").status_code != 200:
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not become ready: " + httpx.get(self.url + "/readyz").text)
                time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()  # uvicorn closes it on shutdown; here too when the server never started


def make_settings(tmp: Path, **overrides: Any):
    return load_settings(database_url=f"sqlite:///{tmp / 'api.sqlite3'}", **overrides)


def serve(serving: Serving, settings) -> LiveServer:
    return LiveServer(create_app(serving=serving, settings=settings)).start()


@contextlib.contextmanager
def served_workbench(settings, **workbench_kwargs: Any) -> Iterator[LiveServer]:
    """A `Workbench(settings, **workbench_kwargs)` served without loading models (rules, pipelines and the
    store only) on a real uvicorn; stopped and closed afterwards."""
    from workbench import Workbench

    wb = Workbench(settings, **workbench_kwargs)
    live = serve(Serving(wb, settings=settings, load_models=False, serve_demo_lm=False), settings)
    try:
        yield live
    finally:
        live.stop()
        wb.close()


@contextlib.contextmanager
def served_with_empty_folders(tmp: Path) -> Iterator[LiveServer]:
    """`served_workbench` on settings of `tmp` with empty knowledge_bases/ and pipelines/ folders there: uploads
    land in `tmp`, never in the repository."""
    for folder in ("knowledge_bases", "pipelines"):
        (tmp / folder).mkdir(exist_ok=True)
    with served_workbench(
        make_settings(tmp), knowledge_base_dir=tmp / "knowledge_bases", pipeline_dir=tmp / "pipelines"
    ) as live:
        yield live


@contextlib.contextmanager
def served_with_demo_digits(
    tmp: Path,
    pipelines: dict[str, str],
    knowledge_bases: dict[str, str] | None = None,
    batching: dict[str, Any] | None = None,
) -> Iterator[tuple[LiveServer, Any]]:
    """A Workbench whose model catalogue in `tmp` holds demo-digits alone (ONNX, loaded at start-up; `batching`:
    its `BatcherConfig` fields), with `pipelines` ({name: YAML text}) and `knowledge_bases` ({file name: rule
    text}) written to folders of `tmp`, served on a real uvicorn with API key `API_KEY`. Yields (server,
    workbench); stopped and closed afterwards."""
    import json

    from workbench import Workbench

    extra = f", batching: {json.dumps(batching)}" if batching else ""  # JSON is YAML's flow style
    (tmp / "catalog.yaml").write_text(
        f"models:\n  - {{name: demo-digits, format: onnx, path: {DIGITS_ONNX}, task: classification{extra}}}\n"
    )
    for folder, files in (("kb", knowledge_bases or {}), ("pipelines", {f"{n}.yaml": t for n, t in pipelines.items()})):
        (tmp / folder).mkdir(exist_ok=True)
        for name, text in files.items():
            (tmp / folder / name).write_text(text)
    settings = make_settings(tmp, api_keys=[API_KEY])
    wb = Workbench(
        settings, knowledge_base_dir=tmp / "kb", pipeline_dir=tmp / "pipelines", model_catalog=tmp / "catalog.yaml"
    )
    try:
        live = serve(Serving(wb, settings=settings, load_models=True, serve_demo_lm=False), settings)
    except BaseException:
        wb.close()
        raise
    try:
        yield live, wb
    finally:
        live.stop()
        wb.close()


# ---- models used by the tests ----------------------------------------------------------------
DIGITS_ONNX = ROOT / "models" / "digits" / "model.onnx"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
API_KEY = "test-key-1"


class HeavyMLP(torch.nn.Module):
    """A real (seeded, untrained) MLP big enough that one row costs milliseconds: for overload tests."""

    def __init__(self, width: int = 1024, depth: int = 8) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width if i else 16, width) for i in range(depth))
        self.head = torch.nn.Linear(width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return self.head(x)
