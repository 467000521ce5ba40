"""`workbench tui`: option checking and a clear error when the server is not there."""

from __future__ import annotations

from typer.testing import CliRunner

from cli.app import app


def test_tui_command_is_mounted_and_checks_its_options():
    runner = CliRunner()
    result = runner.invoke(app, ["tui", "--help"])
    assert result.exit_code == 0 and "--url" in result.output and "--screen" in result.output
    result = runner.invoke(app, ["tui", "--screen", "nope"])
    assert result.exit_code == 2 and "expected one of" in result.output


def test_tui_url_to_no_server_is_one_clear_line():
    result = CliRunner().invoke(app, ["tui", "--url", "http://127.0.0.1:9"])
    assert result.exit_code == 1
    assert "workbench tui:" in result.output and "127.0.0.1:9" in result.output and "Traceback" not in result.output
