"""Regression (n11, newcomer walk-through): a pipeline document whose YAML aliases expand
exponentially ("billion laughs": each line a list of nine aliases of the line before) made the
reader walk every expansion for positions: a 300-byte file took 45 s and 740 MB in `pipeline
check`, a 1 KB one sent to `PUT /v1/pipelines/x` grew the server past 4.5 GB without answering.
A recursive alias (`nodes: &a [*a]`) was a RecursionError: a traceback in the CLI, a 500 over HTTP.
Both are now refused at their line and column, as YAML errors are."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cli.app import app
from workbench.pipeline import Pipeline
from workbench.pipeline.errors import PipelineValidationError

CASES = Path(__file__).resolve().parent / "cases" / "pipeline_n11"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))


def test_alias_expansion_past_the_bound_is_refused_where_it_is() -> None:
    text = (CASES / "alias_bomb.yaml").read_text()
    with pytest.raises(PipelineValidationError) as ei:
        Pipeline.from_yaml(text, "alias_bomb.yaml")
    [issue] = ei.value.issues
    assert (issue.field, issue.line, issue.column) == ("f", 6, 1)
    assert "aliases (*name) expand it to more than 100,000 nodes" in issue.message


def test_a_recursive_alias_is_refused_not_a_recursion_error(monkeypatch) -> None:
    monkeypatch.chdir(CASES)
    got = CliRunner().invoke(app, ["pipeline", "check", "alias_recursive.yaml"])
    assert got.exit_code == 1, got.output
    assert "alias_recursive.yaml:2:8:" in got.output
    assert "an alias refers to a node that contains it" in got.output
    assert got.exception is None or isinstance(got.exception, SystemExit)


def test_a_few_aliases_still_load() -> None:
    """Aliases themselves stay allowed (shared values); only the expansion is bounded."""
    text = (
        "name: x\ndescription: &d shared text\nnodes:\n  - id: in\n    type: input\n    description: *d\n"
        "  - id: out\n    type: output\n    description: *d\n    fields: {v: input}\nedges:\n  - {from: in, to: out}\n"
    )
    p = Pipeline.from_yaml(text, "ok.yaml")
    assert p.name == "x"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from api_live import served_with_empty_folders

    with served_with_empty_folders(tmp_path_factory.mktemp("yaml-aliases")) as live:
        yield live


@pytest.mark.parametrize(
    ("case", "where"),
    [("alias_bomb.yaml", "6:1"), ("alias_recursive.yaml", "2:8")],
)
def test_put_and_validate_answer_422_at_once(server, case, where) -> None:
    body = (CASES / case).read_bytes()
    put = httpx.put(
        f"{server.url}/v1/pipelines/x", content=body, headers={"content-type": "application/yaml"}, timeout=60
    )
    assert put.status_code == 422, put.text
    line, column = (int(x) for x in where.split(":"))
    [detail] = put.json()["error"]["details"]
    assert (detail["line"], detail["column"]) == (line, column), detail
    check = httpx.post(f"{server.url}/v1/pipelines/x/validate", json={"document": body.decode()}, timeout=60)
    assert check.status_code == 200, check.text
    assert check.json()["valid"] is False
    assert (check.json()["issues"][0]["line"], check.json()["issues"][0]["column"]) == (line, column)
