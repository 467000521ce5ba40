"""`GET /v1/runs`: summaries without inputs or outputs, paged by cursor, on a uvicorn server (issue 16)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
from api_live import LiveServer, make_settings

from api.app import create_app
from workbench.serving import Serving
from workbench.store import RunRow


def test_runs_page_through_summaries_without_gaps_or_repeats(tmp_path) -> None:
    from workbench import Workbench

    settings = make_settings(tmp_path)
    wb = Workbench(settings)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    big = {"text": "x" * 200_000}
    ids = []
    for i in range(23):  # two runs share each start time: the cursor must tell them apart by id
        row = RunRow(
            pipeline_name="p" if i % 3 else "q",
            pipeline_version="v1",
            inputs=big,
            outputs={"y": i},
            status="failed" if i == 5 else "succeeded",
            error="boom " * 200 if i == 5 else None,
            failed_node="n1" if i == 5 else None,  # its column (migration 0002 moved it out of `timings`)
            started_at=t0 + timedelta(seconds=i // 2),
        )
        ids.append(wb.store.record_run(row, []))
    server = LiveServer(
        create_app(serving=Serving(wb, settings=settings, load_models=False, serve_demo_lm=False), settings=settings)
    ).start()
    try:
        seen, cursor, pages = [], None, 0
        while True:
            params = {"limit": 5, **({"cursor": cursor} if cursor else {})}
            r = httpx.get(server.url + "/v1/runs", params=params)
            assert r.status_code == 200, r.text
            page = r.json()
            pages += 1
            for run in page["runs"]:
                assert set(run) >= {"run_id", "pipeline", "version", "status", "started_at"}
                assert not {"inputs", "outputs", "explanation", "trace"} & set(run)
            seen += [run["run_id"] for run in page["runs"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == 5 and sorted(seen) == sorted(ids) and len(set(seen)) == len(ids)
        starts = [r["started_at"] for r in httpx.get(server.url + "/v1/runs", params={"limit": 100}).json()["runs"]]
        assert starts == sorted(starts, reverse=True)  # newest first
        failed = httpx.get(server.url + "/v1/runs", params={"status": "failed"}).json()["runs"]
        assert [f["failed_node"] for f in failed] == ["n1"] and len(failed[0]["error"]) == 500
        q = httpx.get(server.url + "/v1/runs", params={"pipeline": "q", "limit": 1000}).json()["runs"]
        assert len(q) == 8 and {r["pipeline"] for r in q} == {"q"}
        full = httpx.get(server.url + f"/v1/runs/{ids[0]}").json()  # the whole run comes from its own endpoint
        assert full["inputs"] == big
        assert httpx.get(server.url + "/v1/runs", params={"cursor": "garbage!"}).status_code == 422
    finally:
        server.stop()
        wb.close()
