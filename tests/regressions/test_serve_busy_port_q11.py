"""`workbench serve --port <busy>` says so in one line and exits 3, before the banner (q11: it printed
the banner, uvicorn's bind error and ~30 lines of nanobind "leaked" noise at exit)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_busy_port_is_one_clear_line_and_exit_3() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**os.environ, "WORKBENCH_DATABASE_URL": "sqlite:///:memory:"}
        got = subprocess.run(
            [sys.executable, "-m", "cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert got.returncode == 3, got.stderr
    want = f"workbench serve: cannot listen on 127.0.0.1:{port}: address already in use"
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(want), got.stderr
    assert got.stdout == ""
