"""Benchmark tables stay readable: one table per row shape, wide when output is not a terminal."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from cli.benchmarks.report import PIPE_WIDTH, percentile_ms, print_rows, report_console


def test_rows_of_different_shapes_get_their_own_tables():
    rows = [
        {"program": "manners-16", "engine": "clips", "seconds": 0.002},
        {"program": "manners-16", "engine": "workbench", "seconds": 0.003, "vs_clips": 1.5},
        {"program": "gating", "engine": "workbench", "evals_per_s": 9000, "first_10k_per_s": 9100},
        {"program": "gating", "engine": "clips", "evals_per_s": 400, "loop": "builder"},
    ]
    buf = io.StringIO()
    print_rows("rules", rows, Console(file=buf, width=300))
    text = buf.getvalue()
    assert text.count("bench rules") == 2
    first, second = text.split("bench rules")[1:]
    assert "vs_clips" in first and "evals_per_s" not in first
    assert "evals_per_s" in second and "loop" in second and "seconds" not in second


def test_report_console_is_wide_on_a_pipe(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert report_console().width == PIPE_WIDTH  # pytest captures stdout: not a terminal
    monkeypatch.setenv("COLUMNS", "120")
    assert report_console().width == 120


def test_every_bench_command_is_a_benchmark():
    """Regression: the experta rule sets (a helper module) were offered as `workbench bench rules_experta`."""
    import importlib

    from cli.bench import available

    names = available()
    assert {"rules", "neural", "pipeline", "api", "generate"} <= set(names)
    for name in names:
        assert callable(getattr(importlib.import_module(f"cli.benchmarks.{name}"), "run", None)), name


def test_percentile_ms_is_numpy_percentile_in_milliseconds():
    seconds = [0.010, 0.020, 0.030, 0.040, 0.100]
    for q in (0, 50, 95, 99, 100):
        assert percentile_ms(seconds, q, 6) == pytest.approx(float(np.percentile(seconds, q)) * 1000)
    # linear interpolation between ranks, not the nearest rank the old copies used
    assert percentile_ms(seconds, 95, 3) == 88.0
    assert percentile_ms([0.001, 0.002], 50) == 1.5
    assert np.isnan(percentile_ms([], 50))
    with pytest.raises(ValueError, match="outside 0..100"):
        percentile_ms(seconds, 0.99 * 1000)
