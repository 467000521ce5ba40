"""Models screen: registered models with device and state, live metrics, load and unload."""

from __future__ import annotations

import numpy as np
import torch

from tui.app import WorkbenchApp
from tui.screens.models import ModelsScreen
from tui.widgets.metric_spark import MetricSpark


def register_tiny(workbench):
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(2, 1))
    return workbench.register_model("tiny-risk", module, example_inputs={"x": np.zeros((1, 2), np.float32)})


async def test_models_list_live_metrics_and_unload(workbench, backend, helpers, monkeypatch):
    torch.set_num_threads(1)
    register_tiny(workbench)
    app = WorkbenchApp(backend, mode="models")
    monkeypatch.setattr(ModelsScreen, "poll_s", 3600.0)  # sample by hand below
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        table = screen.query_one("#models-table")
        rows = {table.get_row_at(i)[0]: table.get_row_at(i) for i in range(table.row_count)}
        # Name, Kind, Version, Format, Task, Device, State
        assert rows["tiny-risk"][5] == "cpu" and rows["tiny-risk"][6] == "● ready"
        assert rows["all-MiniLM-L6-v2"][6] == "unavailable"
        table.move_cursor(row=list(rows).index("tiny-risk"))
        await pilot.pause()
        assert screen.current == "tiny-risk"

        screen.poll()  # first sample: counters only
        await helpers.settle(pilot)
        for _ in range(6):
            workbench.infer_sync("tiny-risk", {"x": np.ones(2, np.float32)})
        screen.poll()
        await helpers.settle(pilot)
        throughput = screen.query_one("#spark-throughput", MetricSpark)
        batch = screen.query_one("#spark-batch", MetricSpark)
        assert throughput.samples and throughput.samples[-1] > 0
        assert batch.samples and batch.samples[-1] >= 1
        assert screen.query_one("#spark-latency", MetricSpark).samples[-1] > 0

        await pilot.press("u")
        await helpers.settle(pilot)
        assert not workbench.catalog.is_loaded("tiny-risk")
        names = [table.get_row_at(i)[0] for i in range(table.row_count)]
        assert "tiny-risk" not in names  # a model registered in code is gone once unloaded
