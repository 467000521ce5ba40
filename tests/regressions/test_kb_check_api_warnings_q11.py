"""`POST /v1/kb/{name}/check` runs the checks of `workbench kb check` (q11): the warnings too (a
defrule redefined in a later file, a premise over a relation nothing defines), with `severity`, and
`valid` stays true for warnings. The CLI's `--json` report is the oracle."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import make_settings, served_workbench  # noqa: E402

from cli.app import app  # noqa: E402

CASES = Path(__file__).resolve().parent / "cases" / "kb_check_q11"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("kbcheck"))
    with served_workbench(settings) as live:
        yield live


def _key(d: dict) -> tuple:
    return (d["file"], d["line"], d["column"], d["message"])


@pytest.mark.parametrize("files", [["m1.clp", "m2.clp"], ["m1.clp", "m2.clp", "m3.clp"]])
def test_api_check_gives_the_warnings_kb_check_gives(server, files, monkeypatch) -> None:
    monkeypatch.chdir(CASES)
    cli = CliRunner().invoke(app, ["kb", "check", *files, "--json"])
    assert cli.exit_code == 0, cli.output
    want = [_key(w) for w in json.loads(cli.stdout)["warnings"]]
    assert ("m2.clp", 1, 1, "defrule dup redefines the one at m1.clp:2:1; CLIPS replaces it") in want
    sources = [{"file": f, "text": (CASES / f).read_text()} for f in files]
    r = httpx.post(server.url + "/v1/kb/tst/check", json={"sources": sources})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["valid"] is True
    assert [_key(d) for d in body["diagnostics"]] == want
    assert {d["severity"] for d in body["diagnostics"]} == {"warning"}


def test_an_error_still_makes_it_invalid(server) -> None:
    r = httpx.post(server.url + "/v1/kb/tst/check", json={"text": "(defrule r (a) =>\n"})
    assert r.status_code == 200 and r.json()["valid"] is False, r.text
    assert r.json()["diagnostics"][0]["severity"] == "error"
