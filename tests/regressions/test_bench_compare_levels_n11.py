"""Regression (n11, newcomer walk-through): `workbench bench api_compare . --concurrency 0,-1` started the
servers and printed rows of concurrency 0 and -1 with rps 0 and every latency nan (exit 0). Levels
below 1 (or none) are now a usage error before anything starts."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli.app import app


@pytest.mark.parametrize("levels", ["0,-1", "1,0", ",", "-64"])
def test_levels_below_one_are_refused_before_anything_starts(levels, monkeypatch):
    from cli.benchmarks import api_compare

    started = []
    monkeypatch.setattr(api_compare, "run", lambda **kw: started.append(kw) or [])
    got = CliRunner().invoke(app, ["bench", "api_compare", ".", "--quick", "--concurrency", levels])
    assert got.exit_code == 2, got.output
    assert started == []
    assert "levels of 1 or more" in " ".join(got.output.split())


def test_valid_levels_reach_the_benchmark(monkeypatch):
    from cli.benchmarks import api_compare

    seen = []
    monkeypatch.setattr(api_compare, "run", lambda **kw: seen.append(kw["concurrency"]) or [])
    got = CliRunner().invoke(app, ["bench", "api_compare", ".", "--quick", "--concurrency", "1,64"])
    assert got.exit_code == 0, got.output
    assert seen == [[1, 64]]
