"""Regression (n11, newcomer walk-through): a model repository folder whose `config.yaml` does not parse
(`models/junk/config.yaml`, as a half-written `workbench model add` or a typo leaves it) ended
`workbench model list` (and `run`, `pipeline check --load-models`...) with a 32-frame traceback whose
last line named the file. Now `workbench: models/junk/config.yaml: cannot read: ...`, exit 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_broken_repository_config_is_one_message(tmp_path):
    models = tmp_path / "models"
    (models / "junk" / "1").mkdir(parents=True)
    (models / "catalog.yaml").write_text("models: []\n")
    (models / "junk" / "config.yaml").write_text("garbage: [\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    env["WORKBENCH_DATABASE_URL"] = f"sqlite:///{tmp_path / 'wb.sqlite3'}"
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run(
        [sys.executable, "-m", "cli", "model", "list"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("workbench: models/junk/config.yaml: cannot read: "), r.stderr
