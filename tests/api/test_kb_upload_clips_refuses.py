"""An upload CLIPS refuses at load is refused at upload (422, located), even where the project's checker
misses the check (the throw-away load, `chaining.forward.load_check`), and nothing is stored.
Before: `PUT /v1/kb/NAME` answered 201 and the first `POST /v1/kb/NAME/run` 422."""

from __future__ import annotations

import httpx
from api_live import served_with_empty_folders

# [MODULPSR1] Module 'MAIN' does not export the deftemplate 'bar' (CLIPS refuses the third construct)
A21 = (
    "(defmodule MAIN (export ?ALL))\n(deftemplate MAIN::foo (slot a))\n"
    "(defmodule X (import MAIN deftemplate foo bar))\n"
)


def test_put_refuses_what_clips_refuses_and_stores_nothing(tmp_path):
    with served_with_empty_folders(tmp_path) as live, httpx.Client(base_url=live.url, timeout=60) as http:
        r = http.put("/v1/kb/a21", content=A21, headers={"Content-Type": "text/plain"})
        assert r.status_code == 422, r.text
        details = r.json()["error"]["details"]
        assert [(d["file"], d["line"], d["column"]) for d in details] == [("a21.clp", 3, 1)], details
        assert "a21.clp:3:1" in r.json()["error"]["message"] and "[MODULPSR1]" in details[0]["message"]
        assert http.get("/v1/kb/a21").status_code == 404
        assert http.post("/v1/kb/a21/run", json={}).status_code == 404
        assert not (tmp_path / "knowledge_bases" / "a21.clp").exists()
        ok = http.put("/v1/kb/a21", content=A21.replace(" bar", ""), headers={"Content-Type": "text/plain"})
        assert ok.status_code == 201, ok.text
        assert http.post("/v1/kb/a21/run", json={}).status_code == 200
