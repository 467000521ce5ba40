"""A 200 predict answer means the run is committed: the server built from settings records before it
answers (`serving.record_before_answer`, default on), so another connection to the database sees
the run at once (with it off, write-behind, this test fails: checked when it was written)."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor

import httpx
from api_live import make_settings, serve

from workbench.demo.digits_data import heldout_sequences
from workbench.serving import Serving


def _stored(db: str, run_id: str) -> bool:
    with sqlite3.connect(db) as con:  # a connection of its own: sees committed rows only
        return con.execute("SELECT count(*) FROM runs WHERE id = ?", (run_id,)).fetchone()[0] == 1


def test_every_200_answer_is_already_in_the_store(tmp_path):
    settings = make_settings(tmp_path)
    assert settings.serving.record_before_answer
    server = serve(Serving(settings=settings, load_models=["demo-digits"], serve_demo_lm=False), settings)
    db = str(tmp_path / "api.sqlite3")
    inputs = [s.to_input() for s in heldout_sequences(length=8)][:8]
    url = server.url + "/v1/pipelines/demo_digits/predict"
    try:

        def one(x):
            r = httpx.post(url, json={"input": x}, timeout=60)
            assert r.status_code == 200, r.text
            return r.json()["run_id"], _stored(db, r.json()["run_id"])  # checked as soon as answered

        with ThreadPoolExecutor(8) as pool:  # concurrent runs share group commits
            results = list(pool.map(one, inputs * 3))
        assert all(stored for _, stored in results), [rid for rid, stored in results if not stored]
    finally:
        server.stop()
