"""The shell: navigation by number keys and the command palette, the help screen, errors as notifications."""

from __future__ import annotations

from tui.app import WorkbenchApp
from tui.backend import BackendError
from tui.inprocess_backend import InProcessBackend
from tui.screens.help import HelpScreen
from tui.widgets.nav_bar import NavBar


async def test_number_keys_switch_screens_and_help_lists_bindings(backend, helpers):
    app = WorkbenchApp(backend)
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        assert app.current_mode == "pipelines"
        for key, mode in [("2", "kb"), ("5", "models"), ("6", "history"), ("3", "run"), ("1", "pipelines")]:
            app.set_focus(None)  # digits type into inputs; from lists and trees they switch screens
            await pilot.press(key)
            await helpers.settle(pilot)
            assert app.current_mode == mode
            assert app.screen.query_one(NavBar).current == mode
        await pilot.press("f1")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        rows = {(r[0], r[1]) for r in help_screen.rows}
        assert ("ctrl+s", "Save version") in rows and ("a", "Add") in rows and ("f1", "Help") in rows  # as typed
        assert ("4", "Ask") in rows  # screen switching keys are listed even though the footer hides them
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


class FailingBackend(InProcessBackend):
    def list_pipelines(self):
        raise BackendError("store unreachable: database is locked")

    def get_pipeline(self, name, version=None):
        raise RuntimeError("a bug below the TUI")


async def test_backend_errors_are_notifications_not_crashes(workbench, helpers):
    app = WorkbenchApp(FailingBackend(workbench))
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        messages = [n.message for n in app._notifications]
        assert any("database is locked" in m for m in messages)
        app.screen.open_pipeline("loan")
        await helpers.settle(pilot)
        assert any("a bug below the TUI" in n.message for n in app._notifications)
        assert app.is_running and app.busy_labels == ()
        await pilot.press("a")  # acting with nothing open: a warning, not an exception
        await pilot.pause()
        assert any("open a pipeline first" in n.message for n in app._notifications)


def test_unknown_start_screen_is_a_clear_error(backend):
    import pytest

    with pytest.raises(ValueError, match="unknown screen 'nope'"):
        WorkbenchApp(backend, mode="nope")
