"""Regression (n11, newcomer walk-through): `GET /v1/kb/NAME` of a knowledge base whose file does not
validate answered 422 (`param: "text"`, a body field a GET does not have), while `GET /v1/kb` lists it
with `errors`; so the TUI over `--url` listed the file in its Rules screen but could not open it to fix
it ("knowledge base 'brokenkb' is invalid"). It now answers 200 with `errors` and the file's text."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from api_live import make_settings, served_workbench

    tmp = tmp_path_factory.mktemp("kb-invalid")
    kbs = tmp / "knowledge_bases"
    kbs.mkdir()
    (kbs / "brokenkb.clp").write_text("(deftemplate a (slot x))\n(defrule broken")
    (kbs / "latin.clp").write_bytes(b'(deftemplate a (slot x (default "caf\xe9")))\n')
    (kbs / "good.clp").write_text("(deftemplate a (slot x))\n")
    settings = make_settings(tmp)
    with served_workbench(settings, knowledge_base_dir=kbs, pipeline_dir=tmp / "pipelines") as live:
        yield live


def test_a_knowledge_base_that_does_not_validate_can_be_read(server):
    r = httpx.get(f"{server.url}/v1/kb/brokenkb")
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["errors"] == [
        "brokenkb.clp:2:16: unexpected end of file: 1 unclosed '(' (defrule starting at line 2, column 1); expected ')'"
    ]
    assert doc["files"] == ["brokenkb.clp"]
    text = "(deftemplate a (slot x))\n(defrule broken"
    assert doc["sources"] == [{"file": "brokenkb.clp", "text": text, "format": "clips", "rules": None}]  # r12: format
    assert doc["version"] is None


def test_a_file_that_is_not_utf8_is_shown_with_replacement_characters(server):
    r = httpx.get(f"{server.url}/v1/kb/latin")
    assert r.status_code == 200, r.text
    assert r.json()["sources"][0]["text"] == '(deftemplate a (slot x (default "caf\ufffd")))\n'
    # located at the byte since n16 (was 1:1 with Python's codec message)
    assert r.json()["errors"] and r.json()["errors"][0].startswith("latin.clp:1:37: not UTF-8: byte 0xe9 ")


def test_valid_and_unknown_knowledge_bases_answer_as_before(server):
    good = httpx.get(f"{server.url}/v1/kb/good")
    assert good.status_code == 200 and good.json()["errors"] is None and good.json()["templates"] == ["a"]
    assert httpx.get(f"{server.url}/v1/kb/nosuch").status_code == 404
    run = httpx.post(f"{server.url}/v1/kb/brokenkb/run", json={"facts": []})
    assert run.status_code == 422  # running it is still refused with its errors


def test_the_tui_over_http_opens_the_broken_file(server):
    from tui.http_backend import HttpBackend

    backend = HttpBackend(server.url)
    try:
        assert "brokenkb.clp" in backend.list_kb_files()
        assert backend.read_kb_file("brokenkb.clp") == "(deftemplate a (slot x))\n(defrule broken"
    finally:
        backend.close()
