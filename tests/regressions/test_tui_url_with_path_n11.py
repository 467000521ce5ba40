"""Regression (n11, newcomer walk-through): `workbench tui --url http://127.0.0.1:8000/v1` (a URL with a
path, as the OpenAI clients take it) said only "workbench tui: no route GET /v1/healthz". It now says
that the server answers but the URL is not its base URL. Real server on 127.0.0.1."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from api_live import served_with_empty_folders

    with served_with_empty_folders(tmp_path_factory.mktemp("tui-url")) as live:
        yield live


@pytest.mark.parametrize("path", ["/v1", "/docs/"])
def test_a_url_with_a_path_names_the_base_url(server, path):
    r = CliRunner().invoke(app, ["tui", "--url", server.url + path])
    assert r.exit_code == 1
    assert r.stderr.strip() == (
        f"workbench tui: {server.url + path.rstrip('/')} answers but has no /healthz: give the base URL of "
        "`workbench serve` (http://HOST:PORT, without a path such as /v1 or /docs)"
    )
