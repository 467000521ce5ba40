"""Snapshot tests (pytest-textual-snapshot) of the main screens at 80x24.

Volatile values (run ids, start times, per-node timings) are replaced by fixed ones through
`StableBackend`, so the SVGs pin layout and content, not the clock. Update after a deliberate
change with `uv run pytest tests/tui/test_tui_snapshots.py --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

import pytest

from tui.app import WorkbenchApp
from tui.inprocess_backend import InProcessBackend
from tui.screens.models import ModelsScreen


class StableBackend(InProcessBackend):
    """The real in-process backend with run ids, times and timings made deterministic."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.description = "in-process · fixtures"
        self.ids: dict[str, str] = {}

    def _stable(self, run: dict) -> dict:
        real = run.get("run_id")
        if real is not None:
            run["run_id"] = self.ids.setdefault(real, f"{len(self.ids) + 1:08d}-0000-4000-8000-000000000000")
        run["started_at"] = "2026-11-30T08:00:00"
        run["duration_s"] = 0.0125
        run["timings"] = {k: 0.001 for k in run.get("timings") or {}}
        for node in (run.get("explanation") or {}).get("nodes") or []:
            node["seconds"] = 0.001
        return run

    def run_pipeline(self, name, inputs, version=None):
        return self._stable(super().run_pipeline(name, inputs, version))

    def list_runs(self, *args, **kwargs):
        return [self._stable(r) for r in super().list_runs(*args, **kwargs)]


@pytest.fixture
def stable(workbench):
    backend = StableBackend(workbench)
    yield backend
    backend.close()


def make_app(backend, mode: str) -> WorkbenchApp:
    """The app with animations off: a tab underline caught mid-slide would make the SVG depend on timing."""
    app = WorkbenchApp(backend, mode=mode)
    app.animation_level = "none"
    return app


async def settle(pilot) -> None:
    # A finished worker can post messages that start another (e.g. Select.Changed -> reload):
    # wait until a pause leaves no worker running, so the snapshot never catches a reload mid-way.
    for _ in range(20):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            break
    pilot.app.clear_notifications()  # toasts would cover the screen being pinned
    for widget in pilot.app.screen.query("Input, TextArea"):
        widget.cursor_blink = False  # a blinking cursor would make the SVG depend on timing
    await pilot.pause()


def test_pipelines_screen(snap_compare, stable):
    async def open_loan(pilot):
        await settle(pilot)
        pilot.app.screen.open_pipeline("loan")
        await settle(pilot)
        await pilot.press("down")

    assert snap_compare(make_app(stable, "pipelines"), run_before=open_loan)


def test_rules_screen_with_an_error(snap_compare, stable, workspace):
    text = (
        (workspace / "knowledge_bases" / "loan_policy.clp").read_text().replace("(>= ?i 50000)))", "(>= ?i 50000))", 1)
    )
    (workspace / "knowledge_bases" / "loan_policy.clp").write_text(text)

    async def open_and_check(pilot):
        await settle(pilot)
        pilot.app.screen.open_file("loan_policy.clp")
        await settle(pilot)
        await pilot.press("f5")
        await settle(pilot)
        await pilot.press("f8")
        await settle(pilot)

    assert snap_compare(make_app(stable, "kb"), run_before=open_and_check)


def test_run_screen_explanation(snap_compare, stable):
    async def run_loan(pilot):
        await settle(pilot)
        screen = pilot.app.screen
        screen.choose("loan")
        await settle(pilot)
        for field, value in {"name": "ann", "income": "42000", "debt": "1000"}.items():
            screen.query_one(f"#in-{field}").value = value
        await pilot.press("ctrl+r")
        await settle(pilot)
        await pilot.press("f3")
        await settle(pilot)

    assert snap_compare(make_app(stable, "run"), run_before=run_loan)


def test_history_screen(snap_compare, stable):
    stable.run_pipeline("loan", {"name": "bo", "income": 60000, "debt": 100})
    stable.run_pipeline("loan", {"name": "cy", "income": 10000, "debt": 9000})

    async def wait(pilot):
        await settle(pilot)

    assert snap_compare(make_app(stable, "history"), run_before=wait)


def test_models_screen(snap_compare, stable, monkeypatch):
    monkeypatch.setattr(ModelsScreen, "poll_s", 3600.0)

    async def wait(pilot):
        await settle(pilot)

    assert snap_compare(make_app(stable, "models"), run_before=wait)


def test_help_screen(snap_compare, stable):
    async def open_help(pilot):
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)

    assert snap_compare(make_app(stable, "pipelines"), run_before=open_help)


def test_ask_screen_after_why_and_how(snap_compare, stable):
    async def consult(pilot):
        import asyncio

        await settle(pilot)
        screen = pilot.app.screen
        await pilot.press("ctrl+r")
        await pilot.pause()
        pilot.app.screen.query_one("#facts-kb").value = "zoo"
        pilot.app.screen.query_one("#facts-goal").value = "(animal (kind ?k))"
        await pilot.press("ctrl+r")
        for typed, question_about in (("no", "feathers"), ("why", "fur"), ("yes", "fur")):
            for _ in range(1500):  # at most 30 s for the prover to ask
                if screen.question is not None and question_about in screen.question.text:
                    break
                await asyncio.sleep(0.02)
            await pilot.press(*typed, "enter")
            await pilot.pause()
        for _ in range(1500):
            if not screen.running:
                break
            await asyncio.sleep(0.02)
        await pilot.press(*"how", "enter")
        await settle(pilot)

    assert snap_compare(make_app(stable, "ask"), run_before=consult)
