"""`bench api`'s closed-loop rows keep the answers per HTTP status (the thirteenth session's final bench had 20
non-2xx answers at concurrency 64 and could not say which), against a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import sys
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from cli.benchmarks import api as bench_api

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import LiveServer  # noqa: E402


def test_a_closed_loop_row_counts_its_answers_per_status():
    app = FastAPI()
    turn = itertools.count()

    @app.post("/v1/x")
    def answer(body: dict) -> JSONResponse:
        n = next(turn)
        return JSONResponse({}, status_code=429 if n % 3 == 2 else 200, headers={"Retry-After": "1"})

    live = LiveServer(app).start(ready=False)  # a real uvicorn on a socket it holds
    try:
        codes: dict[int, int] = {}
        lat, errors, wall = asyncio.run(bench_api._drive(live.url, "POST", "/v1/x", [{"a": 1}], 1, 0.5, codes))
        row = bench_api._row("POST /v1/x", "s", 1, lat, errors, wall, codes)
    finally:
        live.stop()
    answered = len(lat)
    assert answered >= 3 and sum(codes.values()) == answered
    assert codes == {200: answered - answered // 3, 429: answered // 3}  # one client: every third is a 429
    assert row["errors"] == answered // 3
    assert row["status_codes"] == {"200": answered - answered // 3, "429": answered // 3}
    assert "status_codes" not in bench_api._row("POST /v1/x", "s", 1, lat, errors, wall)  # the Ray bench's rows
