"""Regression: WORKBENCH_DEMO_LM (read by neural.generation) made every settings load fail as
an unknown setting, so `workbench serve` exited 2."""

import pytest

from workbench.config import ConfigError, load_settings


@pytest.mark.parametrize(
    "var", ["WORKBENCH_DEMO_LM", "WORKBENCH_TUI_API_KEY", "WORKBENCH_BENCH_THREADS", "WORKBENCH_ONNX_CACHE"]
)
def test_variables_read_outside_settings_are_accepted(monkeypatch, var):
    monkeypatch.setenv(var, "1")
    load_settings()


def test_a_typo_is_still_refused(monkeypatch):
    monkeypatch.setenv("WORKBENCH_DEMO_LMM", "x")
    with pytest.raises(ConfigError, match="WORKBENCH_DEMO_LMM: unknown setting"):
        load_settings()
