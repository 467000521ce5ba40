"""Regression (r12): a knowledge base's decision table meant two things over the API. `GET /v1/kb/NAME`
gave a `.csv` table as its generated rules under the .csv name, and `POST /v1/kb/NAME/check` read every
source as CLIPS text, so a real CSV table sent to check failed ("unexpected 'name,salience,if' outside
any construct"); the TUI's round trip over `--url` worked only because it sent back the generated rules.
Now each source says its `format`: GET gives the table's own CSV (`format: csv`) with its generated
rules in `rules`; check reads a source as its `format` says (default: csv for a .csv name), so both the
real CSV and, with `format: clips`, the generated rules check; the TUI's remote backend sends what GET
gave with its format. Over a real uvicorn server; `kb check` (the CLI) is the oracle for locations."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import make_settings, served_workbench  # noqa: E402

from cli.app import app as cli_app  # noqa: E402
from tui.http_backend import HttpBackend  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "tui" / "rules_fixtures" / "loan_table"
BROKEN_ROW = "approve-north,,>= 1000,in north mars,>= 600,approve,good score in the north,5000\n"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kb-tables")
    (tmp / "kb").mkdir()
    (tmp / "p").mkdir()
    shutil.copytree(FIXTURE, tmp / "kb" / "loan_table")
    with served_workbench(make_settings(tmp), knowledge_base_dir=tmp / "kb", pipeline_dir=tmp / "p") as live:
        yield live, tmp / "kb" / "loan_table"


def _check(url: str, sources: list[dict]) -> dict:
    r = httpx.post(url + "/v1/kb/loan_table/check", json={"sources": sources}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_get_gives_the_table_itself_and_its_rules(served) -> None:
    live, folder = served
    doc = httpx.get(live.url + "/v1/kb/loan_table", timeout=60).json()
    by_file = {s["file"].rsplit("/", 1)[-1]: s for s in doc["sources"]}
    assert by_file["loan.clp"]["format"] == "clips" and by_file["loan.clp"]["rules"] is None
    table = by_file["loan.csv"]
    assert table["format"] == "csv" and table["text"] == (folder / "loan.csv").read_text()
    assert table["rules"].startswith("(defrule reject-low-income")


def test_check_reads_each_source_as_its_format(served) -> None:
    live, folder = served
    clp = {"file": "loan.clp", "text": (folder / "loan.clp").read_text()}
    csv_text = (folder / "loan.csv").read_text()
    # before the fix: invalid, "unexpected 'name,salience,if' outside any construct"
    assert _check(live.url, [clp, {"file": "loan.csv", "text": csv_text}]) == {
        "name": "loan_table",
        "valid": True,
        "diagnostics": [],
    }
    rules = httpx.get(live.url + "/v1/kb/loan_table", timeout=60).json()["sources"][1]["rules"]
    assert _check(live.url, [clp, {"file": "loan.csv", "text": rules, "format": "clips"}])["valid"]
    assert not _check(live.url, [clp, {"file": "loan.csv", "text": rules}])["valid"]  # a .csv name reads as CSV

    broken = csv_text.splitlines(keepends=True)[0] + csv_text.splitlines(keepends=True)[1] + BROKEN_ROW
    shown = _check(live.url, [clp, {"file": "loan.csv", "text": broken}])
    on_disk = folder.parent.parent / "broken"
    on_disk.mkdir()
    shutil.copy(folder / "loan.clp", on_disk / "loan.clp")
    (on_disk / "loan.csv").write_text(broken)
    cli = CliRunner().invoke(cli_app, ["kb", "check", str(on_disk)]).output
    cli_lines = [line.split("broken/", 1)[1] for line in cli.splitlines() if "loan.csv:" in line]
    assert cli_lines and not shown["valid"]
    assert [f"{d['file']}:{d['line']}:{d['column']}: {d['message']}" for d in shown["diagnostics"]] == cli_lines


def test_the_tuis_remote_backend_checks_a_file_beside_a_table(served) -> None:
    """The TUI over --url (its HttpBackend) checks an edited .clp with the table as the server gives it."""
    live, folder = served
    backend = HttpBackend(live.url)
    assert "loan_table/loan.clp" in backend.list_kb_files()
    text = backend.read_kb_file("loan_table/loan.clp")
    assert backend.check_kb("loan_table/loan.clp", text) == []
    broken = text.replace("(slot income (type NUMBER))", "(slot income (type NUMBER)")
    found = backend.check_kb("loan_table/loan.clp", broken)
    assert found and all(d["file"].endswith("loan.clp") for d in found), found
