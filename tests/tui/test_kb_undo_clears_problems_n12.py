"""Rules screen: after a refused ctrl+s (a draft with a problem), undoing the edit back to the text on
disk left the header at "saved  ✗ 1 problem" and the problem listed and marked, for a text that is not
the one checked. Back at the saved text, the draft's problems are cleared (as when the file is opened)."""

from __future__ import annotations

from textual.widgets import Static

from tui.app import WorkbenchApp
from tui.widgets.clips_editor import ClipsEditor


async def test_undo_back_to_the_saved_text_clears_the_drafts_problems(backend, helpers):
    app = WorkbenchApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.open_file("loan_gate.clp")
        await helpers.settle(pilot)
        editor = screen.query_one(ClipsEditor)
        editor.focus()
        editor.move_cursor((editor.document.line_count - 1, 0))
        await pilot.press(*"(defrule bad (x ?y) => (printout t ?z))")  # ?z unbound
        await pilot.press("ctrl+s")
        await helpers.wait_until(pilot, lambda: bool(screen.diagnostics), what="the draft's problem")
        assert "1 problem" in str(screen.query_one("#kb-status", Static).render())
        while screen.modified:
            await pilot.press("ctrl+z")
            await pilot.pause()
        assert screen.diagnostics == [] and not editor.markers
        status = str(screen.query_one("#kb-status", Static).render())
        assert "saved" in status and "no problems" in status, status
