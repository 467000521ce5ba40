"""Regression (n10, newcomer walk-through): `workbench tui --url URL` with no server there said
"... the TUI reconnects by itself when it answers." and then exited 1: the TUI never opened, so
nothing would reconnect. At start-up the message now ends at what to do; inside a running TUI
(a server that goes away later) the reconnection note stays."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from cli.app import app


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_start_against_no_server_promises_no_reconnection():
    url = f"http://127.0.0.1:{_closed_port()}"
    r = CliRunner().invoke(app, ["tui", "--url", url])
    assert r.exit_code == 1
    assert r.stderr.strip() == (
        f"workbench tui: cannot reach the server at {url} (connection refused). "
        "Start it with `workbench serve` or check --url."
    )


def test_a_running_tui_still_says_it_reconnects():
    from tui.backend import BackendError
    from tui.http_backend import HttpBackend

    backend = HttpBackend(f"http://127.0.0.1:{_closed_port()}")
    try:
        with pytest.raises(BackendError, match="the TUI reconnects by itself when it answers"):
            backend.ping()
    finally:
        backend.close()
