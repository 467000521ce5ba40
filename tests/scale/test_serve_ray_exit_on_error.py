"""Regression (q14): `workbench serve --ray` took `--no-exit-on-error` (and
`WORKBENCH_SERVER__EXIT_ON_ERROR=false`) and ignored it, and when start-up loading failed in a replica it
exited 1 with "Deploying application workbench failed: Failed to update the deployments ['model-broken']",
which does not say why. Ray Serve retries a replica whose start-up fails and then marks the application
failed, so there is no server left to keep up: `--ray` refuses to keep serving (exit 2, naming the flag or
the setting), and a failed start stops it with exit 1 and one line naming each failed deployment's reason,
as plain `serve` does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from cli.app import app

# The last lines Ray Serve keeps for a deployment whose replica failed in its constructor (controller log of
# `serve --ray local` with a catalogue model that is not an ONNX file, Ray 2.60), as `wait_started` raises it.
RAY_MESSAGE = (
    "The deployment failed to start 1 times in a row. This may be due to a problem with its constructor or "
    "initial health check failing. See controller logs for details. Error:\n"
    "\x1b[36mray::ServeReplica:workbench:model-broken.initialize_and_get_metadata()\x1b[39m (pid=7431, ip=1.2.3.4)\n"
    '  File "/work/workbench/scale/replicas.py", line 64, in _start_serving\n'
    "    await wait_started(serving)\n"
    "workbench.scale.StartupFailedError: ModelLoadError: models/broken.onnx: not a loadable ONNX model\n"
)


# Ray's own start-up failures under load (its raylet has 30 s to register; Serve's proxy 60 s to start)
RAY_DID_NOT_START = ("cannot start a local Ray instance", "HTTP proxies not available")


def test_no_exit_on_error_is_refused_with_ray(monkeypatch):
    monkeypatch.delenv("WORKBENCH_SERVER__EXIT_ON_ERROR", raising=False)
    res = CliRunner().invoke(app, ["serve", "--ray", "local", "--no-exit-on-error"])
    assert res.exit_code == 2, res.output
    assert res.output.startswith("workbench serve --ray: --no-exit-on-error is not supported with --ray: "), res.output
    assert "stops with exit status 1 naming the reason" in res.output


def test_the_setting_off_is_refused_with_ray_and_names_the_override(monkeypatch):
    monkeypatch.setenv("WORKBENCH_SERVER__EXIT_ON_ERROR", "false")
    res = CliRunner().invoke(app, ["serve", "--ray", "local"])
    assert res.exit_code == 2, res.output
    assert "WORKBENCH_SERVER__EXIT_ON_ERROR=false (the settings) is not supported with --ray" in res.output
    assert "(pass --exit-on-error to override the setting)" in res.output


def test_the_failure_reason_names_each_failed_deployment():
    pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")
    from workbench.scale.serve_app import failure_reason

    status = SimpleNamespace(
        message="Failed to update the deployments ['model-broken'].",
        deployments={
            "pipelines": SimpleNamespace(status="DeploymentStatus.UPDATING", message=""),
            "model-broken": SimpleNamespace(status="DeploymentStatus.DEPLOY_FAILED", message=RAY_MESSAGE),
            "model-other": SimpleNamespace(
                status="DEPLOY_FAILED", message="Error:\nTraceback ...\nneural.errors.ModelLoadError: no file x"
            ),
        },
    )
    assert failure_reason(status) == (
        "deployment model-broken: ModelLoadError: models/broken.onnx: not a loadable ONNX model; "
        "deployment model-other: ModelLoadError: no file x"
    )
    bare = SimpleNamespace(message="Failed to update\n the deployments ['x'].", deployments={})
    assert failure_reason(bare) == "Failed to update the deployments ['x']."


def test_the_failure_reason_skips_the_lines_an_exception_adds_after_its_own():
    """Stop 31's CI: a replica that failed with a SQLAlchemy error was named by the error's last line, its
    `(Background on this error at: ...)` link, instead of the error."""
    pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")
    from workbench.scale.serve_app import failure_reason

    message = (
        "The deployment failed to start 1 times in a row. See controller logs for details. Error:\n"
        '  File "/work/workbench/store/store.py", line 58, in open\n'
        "    upgrade(engine)\n"
        "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) table knowledge_bases already exists\n"
        "[SQL: \nCREATE TABLE knowledge_bases (\n\tid INTEGER NOT NULL\n)\n\n]\n"
        "(Background on this error at: https://sqlalche.me/e/21/e3q8)\n"
    )
    status = SimpleNamespace(
        message="", deployments={"model-broken": SimpleNamespace(status="DEPLOY_FAILED", message=message)}
    )
    assert failure_reason(status) == (
        "deployment model-broken: OperationalError: (sqlite3.OperationalError) table knowledge_bases already exists"
    )
    no_exception_line = SimpleNamespace(status="DEPLOY_FAILED", message="Error:\nsomething broke (see logs)")
    assert failure_reason(SimpleNamespace(message="", deployments={"x": no_exception_line})) == (
        "deployment x: something broke (see logs)"
    )


@pytest.mark.slow
def test_serve_ray_stops_naming_why_a_catalogue_model_does_not_load(tmp_path: Path):
    """End to end: a local Ray instance (minutes on a busy 2-core machine), one constructor try per replica."""
    pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")
    from postgres_server import free_port

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "broken.onnx").write_bytes(b"not an onnx model\n")
    (tmp_path / "models" / "catalog.yaml").write_text(
        "models:\n  - {name: broken, format: onnx, path: broken.onnx, task: custom}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    env |= {
        "WORKBENCH_DATABASE_URL": f"sqlite:///{tmp_path / 'wb.sqlite3'}",
        # Ray's default is 3 tries per replica; one is enough to see the reason
        "WORKBENCH_RAY__SERVE_ENV": '{"RAY_SERVE_MAX_PER_REPLICA_RETRY_COUNT": "1"}',
    }
    for _ in range(3):  # Ray itself may fail to start on a busy 2-core machine: that is not what is tested
        logs = tempfile.mkdtemp(prefix="wb-ray-")  # short: Ray's socket paths must stay under 107 bytes
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "cli", "serve", "--ray", "local", "--port", str(free_port())],
                cwd=tmp_path,  # ./models/catalog.yaml is the catalogue
                env={**env, "RAY_TMPDIR": logs},
                capture_output=True,
                text=True,
                timeout=900,
            )
        finally:
            shutil.rmtree(logs, ignore_errors=True)
        if not any(m in proc.stderr for m in RAY_DID_NOT_START):
            break
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("workbench serve --ray: start-up loading failed, server stopped: "), proc.stderr[-3000:]
    assert "deployment model-broken: ModelLoadError: models/broken.onnx: not a loadable ONNX model" in last, last
