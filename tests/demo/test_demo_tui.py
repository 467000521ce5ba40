"""The demo from the TUI: run demo_intents on the Run screen and read the explanation."""

from __future__ import annotations

from textual.widgets import Input, Select

from tui.app import WorkbenchApp
from tui.messages import RunFinished
from tui.screens.run import RunScreen


class RecordingApp(WorkbenchApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.events: list = []

    def on_run_finished(self, message: RunFinished) -> None:
        self.events.append(message)


async def _settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def test_run_demo_intents_on_the_run_screen(wb):
    from tui.inprocess_backend import InProcessBackend

    app = RecordingApp(InProcessBackend(wb), mode="run")
    async with app.run_test(size=(100, 30)) as pilot:
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        screen.query_one("#run-pipeline", Select).value = "demo_intents"
        await _settle(pilot)
        screen.query_one(
            "#in-text", Input
        ).value = "someone has been using my account"  # held-out, labelled fraud_report
        await pilot.press("ctrl+r")
        await _settle(pilot)
        result = app.events[-1].result
        assert result["status"] == "succeeded", result
        assert result["outputs"]["action"] == "escalate" and result["outputs"]["intent"] == "fraud_report"
        await pilot.press("f3")
        await pilot.pause()
        assert screen.query_one("#run-tabs").active == "tab-explanation"
