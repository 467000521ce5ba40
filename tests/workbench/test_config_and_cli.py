"""Settings from the environment and a file; the CLI's version and doctor commands."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cli import app
from workbench.config import ConfigError, load_settings

runner = CliRunner()


def test_settings_read_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DEVICE", "cpu")
    monkeypatch.setenv("WORKBENCH_SERVER__PORT", "9123")
    monkeypatch.setenv("WORKBENCH_API_KEYS", "k1, k2")
    s = load_settings()
    assert (s.device, s.server.port, s.api_keys) == ("cpu", 9123, ["k1", "k2"])


def test_settings_file_and_env_priority(monkeypatch, tmp_path):
    f = tmp_path / "wb.toml"
    f.write_text('device = "cuda"\n[server]\nhost = "0.0.0.0"\nport = 7000\n')
    monkeypatch.setenv("WORKBENCH_SETTINGS_FILE", str(f))
    monkeypatch.setenv("WORKBENCH_SERVER__PORT", "7001")
    s = load_settings()
    assert (s.device, s.server.host, s.server.port) == ("cuda", "0.0.0.0", 7001)


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        ("WORKBENCH_DEVICE", "tpu", "WORKBENCH_DEVICE='tpu': Input should be 'auto', 'cpu' or 'cuda'"),
        ("WORKBENCH_SERVER__PORT", "99999", "WORKBENCH_SERVER__PORT='99999'"),
        ("WORKBENCH_DATABASE_URL", "not a url", "WORKBENCH_DATABASE_URL='not a url'"),
        ("WORKBENCH_COLOUR", "x", "WORKBENCH_COLOUR"),
    ],
)
def test_bad_setting_names_the_variable(monkeypatch, var, value, message):
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert message in str(err.value)


def test_version_and_help():
    assert runner.invoke(app, ["version"]).stdout.strip() == "0.1.0"
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "doctor" in result.stdout and "bench" in result.stdout


def _doctor(env_extra: dict[str, str], monkeypatch):
    """`workbench doctor` in this process (the command's code, settings read from the environment)."""
    for k, v in env_extra.items():
        monkeypatch.setenv(k, v)
    return runner.invoke(app, ["doctor"])


def test_doctor_creates_and_migrates_new_sqlite_file(tmp_path, monkeypatch):
    """The one doctor test as a real `python -m cli doctor` subprocess (the installed entry point)."""
    db = tmp_path / "new" / "doctor.sqlite3"
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{db}")
    monkeypatch.setenv("COLUMNS", "200")
    proc = subprocess.run(
        [sys.executable, "-m", "cli", "doctor"], capture_output=True, text=True, env=dict(os.environ), timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert db.exists()
    assert "schema revision 0004" in proc.stdout
    assert "CPUExecutionProvider" in proc.stdout


def test_doctor_reports_bad_setting_with_nonzero_exit(monkeypatch):
    result = _doctor({"WORKBENCH_DEVICE": "tpu", "COLUMNS": "200"}, monkeypatch)
    assert result.exit_code == 1
    assert "WORKBENCH_DEVICE='tpu'" in result.stdout and "BROKEN" in result.stdout


def test_doctor_reports_broken_requirement(monkeypatch):
    from cli import doctor

    checks = doctor.check_imports(["torch", "a_module_that_is_not_installed"])
    assert [c.ok for c in checks] == [True, False]
    assert "a_module_that_is_not_installed" in checks[1].detail
    monkeypatch.setattr(doctor, "REQUIRED", [*doctor.REQUIRED, "a_module_that_is_not_installed"])
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1 and "BROKEN" in result.stdout


def test_doctor_refuses_newer_database(tmp_path, monkeypatch):
    import sqlite3

    db = tmp_path / "newer.sqlite3"
    assert _doctor({"WORKBENCH_DATABASE_URL": f"sqlite:///{db}"}, monkeypatch).exit_code == 0
    con = sqlite3.connect(db)
    con.execute("UPDATE alembic_version SET version_num='9999'")
    con.commit()
    con.close()
    result = _doctor({"WORKBENCH_DATABASE_URL": f"sqlite:///{db}", "COLUMNS": "300"}, monkeypatch)
    assert result.exit_code == 1 and "newer" in result.stdout


@pytest.mark.parametrize(
    ("why", "ok"),
    [
        ("not built (No module named 'rules._native_read'); run `bash scripts/bootstrap.sh` with a C compiler", True),
        ("does not fit rules.ast (configure: RuleDef has 15 fields, the reader expects 14)", False),
        ("built from another version of rules/native_read*.c; run `bash scripts/bootstrap.sh` again", False),
    ],
)
def test_doctor_fails_a_c_part_built_but_unusable(monkeypatch, why, ok):
    """A C part that is not built is fine (Python code runs instead); one that is built but cannot be
    used (a stale build, or a reader that no longer fits rules.ast: found by a newcomer after RuleDef
    gained `module`) is a problem doctor must report, not an "ok" hiding it."""
    from cli.doctor import check_rule_engine_c_parts
    from rules import native_read

    monkeypatch.setattr(native_read, "AVAILABLE", False)
    monkeypatch.setattr(native_read, "UNAVAILABLE", why)
    check = check_rule_engine_c_parts()
    assert check.ok is ok
    assert f"rule text reader: {why}" in check.detail
