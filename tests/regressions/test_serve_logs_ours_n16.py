"""Regression (n16, a newcomer's finding): `workbench serve` configured uvicorn's loggers only, so the project's
INFO lines (docs/api.md: "the server logs `knowledge base 'NAME': evaluation cancelled by its caller after S s
and N firings`") went to Python's last-resort handler, which shows warnings only: they never appeared. `serve`
now gives uvicorn a logging configuration holding the project's loggers at its --log-level."""

from __future__ import annotations

import socket
import subprocess
import sys

import uvicorn
from typer.testing import CliRunner

from cli.app import app

EMIT = """
import logging.config
from cli.serve import log_config
logging.config.dictConfig(log_config({level!r}))
logging.getLogger("workbench.serving").info("knowledge base 'k': evaluation cancelled by its caller")
logging.getLogger("neural.batcher").debug("a debug line")
logging.getLogger("uvicorn.error").info("uvicorn's own line")
"""


def test_the_projects_info_lines_are_shown_at_serves_level():
    out = subprocess.run([sys.executable, "-c", EMIT.format(level="info")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert "INFO:     knowledge base 'k': evaluation cancelled by its caller" in lines
    assert "INFO:     uvicorn's own line" in lines
    assert not any("a debug line" in line for line in lines)
    quiet = subprocess.run([sys.executable, "-c", EMIT.format(level="warning")], capture_output=True, text=True)
    assert "evaluation cancelled" not in quiet.stderr


def test_serve_hands_the_configuration_to_uvicorn(monkeypatch, tmp_path):
    seen: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: seen.update(kw))
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path / 'wb.sqlite3'}")
    with socket.socket() as s:  # a port free now: `serve` checks it before starting uvicorn (patched out here)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = CliRunner().invoke(app, ["serve", "--port", str(port), "--log-level", "debug", "--no-exit-on-error"])
    assert r.exit_code == 0, r.output
    loggers = seen["log_config"]["loggers"]
    assert {
        name: loggers[name]["level"] for name in ("workbench", "neural", "chaining", "api", "rules")
    } == dict.fromkeys(("workbench", "neural", "chaining", "api", "rules"), "DEBUG")
