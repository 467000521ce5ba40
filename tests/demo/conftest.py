"""Fixtures of the demo tests: one Workbench per module over its own SQLite store (models load once)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def wb(tmp_path_factory):
    torch.set_num_threads(1)
    from workbench import Workbench
    from workbench.store import Store

    store = Store.open(f"sqlite:///{tmp_path_factory.mktemp('demo') / 'runs.sqlite3'}")
    w = Workbench(store=store)
    yield w
    w.close()
