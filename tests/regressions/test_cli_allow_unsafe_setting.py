"""Regression: `kb check|run|ask|explain` ignored WORKBENCH_ALLOW_UNSAFE_RULES (the README's
setting for OS-reaching rule functions); only --allow-unsafe worked. A bad value of the setting
is a clear error (exit 2), not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from workbench.config import get_settings

runner = CliRunner()
UNSAFE = '(defrule r (never) => (save-facts "never-written.txt"))\n'


@pytest.mark.parametrize("command", [["kb", "check"], ["kb", "run"]])
def test_setting_allows_unsafe_functions(tmp_path: Path, monkeypatch, command) -> None:
    f = tmp_path / "u.clp"
    f.write_text(UNSAFE)
    r = runner.invoke(app, [*command, str(f)])
    assert (
        r.exit_code == 1 and "unsafe function 'save-facts'" in r.output and "WORKBENCH_ALLOW_UNSAFE_RULES" in r.output
    )
    monkeypatch.setenv("WORKBENCH_ALLOW_UNSAFE_RULES", "true")
    get_settings.cache_clear()
    r = runner.invoke(app, [*command, str(f)])
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "never-written.txt").exists()


def test_bad_setting_value(tmp_path: Path, monkeypatch) -> None:
    f = tmp_path / "u.clp"
    f.write_text(UNSAFE)
    monkeypatch.setenv("WORKBENCH_ALLOW_UNSAFE_RULES", "maybe")
    get_settings.cache_clear()
    r = runner.invoke(app, ["kb", "ask", str(f), "(x)"])
    assert r.exit_code == 2 and "WORKBENCH_ALLOW_UNSAFE_RULES='maybe'" in r.output, r.output
