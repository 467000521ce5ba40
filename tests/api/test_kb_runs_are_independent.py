"""Issue 16: state must not leak between requests through pooled CLIPS environments, and a
knowledge base that reads the console gets a clear error from the server (never a blocked worker)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from api_live import API_KEY

AUTH = {"Authorization": f"Bearer {API_KEY}"}
CASES = Path(__file__).resolve().parents[1] / "regressions" / "cases"


@pytest.fixture(scope="module")
def http(pipeline_server):
    with httpx.Client(base_url=pipeline_server.url, timeout=60) as c:
        yield c


def test_globals_leak_counts_one_in_every_request(http):
    text = (CASES / "hardening" / "globals_leak.clp").read_text()
    assert http.put("/v1/kb/globals_leak", json={"text": text}, headers=AUTH).status_code in (200, 201)
    outputs = [http.post("/v1/kb/globals_leak/run", json={}).json()["output"] for _ in range(3)]
    assert outputs == ["1\n", "1\n", "1\n"]  # it counted 1, 2, 3


def test_a_program_that_reads_the_console_gets_a_clear_error(http):
    text = (CASES / "clips" / "reads_stdin.clp").read_text()
    assert http.put("/v1/kb/reads_stdin", json={"text": text}, headers=AUTH).status_code in (200, 201)
    r = http.post("/v1/kb/reads_stdin/run", json={}, timeout=30)
    assert 400 <= r.status_code < 500, r.text
    assert "reads the console" in r.text
