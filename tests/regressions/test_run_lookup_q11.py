"""Run ids and the run list from a fresh tester's pass over the README (q11): `%` and `_` in an id prefix
are plain characters, an ambiguous prefix says so and lists the ids (409 `ambiguous_id`, CLI exit 1),
`GET /v1/runs` carries the failed node, `runs list` refuses a bad `--limit` / `--status` (exit 2)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import LiveServer, make_settings  # noqa: E402

from api.app import create_app  # noqa: E402
from cli.app import app  # noqa: E402
from workbench.serving import Serving  # noqa: E402
from workbench.store import RunRow  # noqa: E402

IDS = [
    "4fcc980b-0000-4000-8000-000000000001",
    "8519aaaa-0000-4000-8000-000000000002",
    "8519bbbb-0000-4000-8000-000000000003",
]
runner = CliRunner()


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    from workbench import Workbench

    tmp = tmp_path_factory.mktemp("runs")
    settings = make_settings(tmp)
    wb = Workbench(settings)
    for i, rid in enumerate(IDS):
        failed = i == 0
        row = RunRow(
            id=rid,
            pipeline_name="p",
            pipeline_version="v1",
            inputs={},
            outputs={} if failed else {"y": i},
            status="failed" if failed else "succeeded",
            error="node 'n1' failed: boom" if failed else None,
            failed_node="n1" if failed else None,
            timings={},
            started_at=datetime(2026, 1, 1, 0, 0, i, tzinfo=UTC),
        )
        wb.store.record_run(row, [])
    server = LiveServer(
        create_app(serving=Serving(wb, settings=settings, load_models=False, serve_demo_lm=False), settings=settings)
    ).start()
    try:
        yield server, settings.database_url
    finally:
        server.stop()
        wb.close()


@pytest.mark.parametrize("prefix", ["4fc_", "4fc%25", "4fcc_", "____"])
def test_like_wildcards_in_a_prefix_match_nothing(stored, prefix) -> None:
    server, _ = stored
    r = httpx.get(server.url + f"/v1/runs/{prefix}")
    assert r.status_code == 404, r.text
    assert httpx.get(server.url + "/v1/runs/4fcc").json()["run_id"] == IDS[0]


def test_an_ambiguous_prefix_is_a_409_listing_the_ids(stored) -> None:
    server, _ = stored
    r = httpx.get(server.url + "/v1/runs/8519")
    assert r.status_code == 409, r.text
    body = r.json()["error"]
    assert body["code"] == "ambiguous_id" and body["param"] == "run_id"
    assert "ambiguous" in body["message"] and IDS[1] in body["message"] and IDS[2] in body["message"]
    assert [d["run_id"] for d in body["details"]] == IDS[1:]


def test_the_run_list_carries_the_failed_node(stored) -> None:
    server, _ = stored
    runs = httpx.get(server.url + "/v1/runs", params={"status": "failed"}).json()["runs"]
    assert [(r["run_id"], r["failed_node"]) for r in runs] == [(IDS[0], "n1")]


def _cli(db_url: str, monkeypatch, *args: str):
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", db_url)
    monkeypatch.setenv("COLUMNS", "200")
    return runner.invoke(app, list(args))


def test_cli_show_and_replay_take_wildcards_literally_and_say_ambiguous(stored, monkeypatch) -> None:
    _, db = stored
    for cmd in ("show", "replay"):
        got = _cli(db, monkeypatch, "runs", cmd, "4fc_")
        assert got.exit_code == 1 and "run '4fc_' not found" in got.output, got.output
        got = _cli(db, monkeypatch, "runs", cmd, "8519")
        assert got.exit_code == 1 and "ambiguous" in got.output and IDS[1] in got.output, got.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--limit", "-5"], "--limit"),
        (["--limit", "0"], "--limit"),
        (["--status", "bogus"], "--status"),
    ],
)
def test_cli_runs_list_refuses_bad_options(stored, monkeypatch, args, says) -> None:
    _, db = stored
    got = _cli(db, monkeypatch, "runs", "list", "--json", *args)
    assert got.exit_code == 2 and says in got.output and "Invalid value" in got.output, got.output


def test_cli_runs_list_filters_failed(stored, monkeypatch) -> None:
    _, db = stored
    got = _cli(db, monkeypatch, "runs", "list", "--status", "failed", "--json", "--limit", "1")
    assert got.exit_code == 0 and IDS[0] in got.output and IDS[1] not in got.output, got.output
