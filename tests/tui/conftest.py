"""Fixtures for the TUI tests: a copy of the fixture workspace, a real Workbench over it, helpers."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SIZE = (80, 24)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A writable copy of tests/tui/fixtures: knowledge_bases/ and pipelines/."""
    target = tmp_path / "ws"
    shutil.copytree(FIXTURES, target)
    return target


@pytest.fixture
def workbench(workspace: Path):
    """A real `Workbench` over the workspace, with the per-test SQLite store from tests/conftest.py."""
    from workbench import Workbench

    wb = Workbench(
        knowledge_base_dir=workspace / "knowledge_bases",
        pipeline_dir=workspace / "pipelines",
        model_catalog=workspace / "catalog.yaml",
    )
    yield wb
    wb.close()


@pytest.fixture
def backend(workbench):
    from tui.backend import InProcessBackend

    return InProcessBackend(workbench)


@pytest.fixture
def helpers():
    """`helpers.settle(pilot)` and `helpers.wait_until(pilot, cond)` (fixtures, since test modules here are not a
    package)."""
    import types

    return types.SimpleNamespace(settle=settle, wait_until=wait_until, SIZE=SIZE)


async def settle(pilot) -> None:
    """Let pending messages run and every worker finish."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def wait_until(pilot, condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Poll `condition` while the app runs (for workers that wait on the person, e.g. consultations)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.05)
        await asyncio.sleep(0)


@pytest.fixture(autouse=True)
def _svg_ids_from_visible_content(monkeypatch):
    """Snapshots pin what a person sees. Rich names an SVG's CSS classes after a hash of the
    segments' reprs, which include invisible style meta that can differ between runs (seen as a
    flaky history snapshot with identical text and rectangles); use one fixed prefix instead."""
    from rich.console import Console

    original = Console.export_svg

    def export_svg(self, *args, **kwargs):
        kwargs.setdefault("unique_id", "terminal-snapshot")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Console, "export_svg", export_svg)
