"""Regression (n10 #19): a start-up loading failure other than the database (here a catalogue model
whose ONNX file does not load) left `workbench serve` running, `/readyz` answering 503 `failed` and
every model route 503, until someone killed it; a supervisor saw a live process. Like Triton
(`--exit-on-error`, on by default), `serve` now stops and exits 1 with one line naming the reason;
`--no-exit-on-error` / `WORKBENCH_SERVER__EXIT_ON_ERROR=false` keep today's behaviour."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder whose model catalogue names an ONNX file that is not a model."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "broken.onnx").write_bytes(b"not an onnx model\n")
    (tmp_path / "models" / "catalog.yaml").write_text(
        "models:\n  - {name: broken, format: onnx, path: broken.onnx, task: custom}\n"
    )
    return tmp_path


def _start(project: Path, *args: str, stderr=subprocess.PIPE, **env: str) -> subprocess.Popen:
    """`workbench serve --port 0` (a port the system picks, named on its first line) in `project`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    clean |= {"WORKBENCH_DATABASE_URL": f"sqlite:///{project / 'wb.sqlite3'}", **env}
    return subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--port", "0", *args],
        cwd=project,  # ./models/catalog.yaml is the catalogue
        env=clean,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def _port(proc: subprocess.Popen, log: Path, timeout_s: float = 120) -> int:
    """The port the server bound, from its first line (`workbench serve: http://127.0.0.1:PORT ...`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = re.search(r"^workbench serve: http://127\.0\.0\.1:(\d+) ", log.read_text(), re.M)
        if found:
            return int(found.group(1))
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)


def _finish(proc: subprocess.Popen, timeout_s: float = 120) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"workbench serve kept running after start-up loading failed:\n{err[-3000:]}") from None
    return proc.returncode, err


def _readyz(port: int) -> tuple[int, dict] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
    except OSError:
        return None


def _assert_stopped_with_one_line(rc: int, err: str) -> None:
    assert rc == 1, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        "workbench serve: start-up loading failed, server stopped (--no-exit-on-error keeps it up): "
    )
    assert "ModelLoadError: models/broken.onnx: not a loadable ONNX model" in last


def test_serve_exits_when_a_catalogue_model_does_not_load(project):
    rc, err = _finish(_start(project))
    _assert_stopped_with_one_line(rc, err)
    assert "Application shutdown complete" in err  # stopped cleanly, not killed


def test_the_setting_keeps_serving_and_the_flag_overrides_it(project):
    log = project / "serve.log"
    with log.open("w") as out:
        proc = _start(project, stderr=out, WORKBENCH_SERVER__EXIT_ON_ERROR="false")
    try:
        port = _port(proc, log)
        deadline = time.monotonic() + 120
        answer = None
        while time.monotonic() < deadline and proc.poll() is None:
            answer = _readyz(port)
            if answer is not None and answer[1].get("state") != "loading":
                break
            time.sleep(0.5)
        assert proc.poll() is None, "the server exited although WORKBENCH_SERVER__EXIT_ON_ERROR=false"
        assert answer is not None and answer[0] == 503 and answer[1]["state"] == "failed", answer
        assert "ModelLoadError" in answer[1]["error"]
        time.sleep(1.0)
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.communicate(timeout=60)

    rc, err = _finish(_start(project, "--exit-on-error", WORKBENCH_SERVER__EXIT_ON_ERROR="false"))
    _assert_stopped_with_one_line(rc, err)
