"""Rules screen: open a broken rule file, see the located error, fix it in the editor, save, run."""

from __future__ import annotations

from tui.app import WorkbenchApp
from tui.messages import KnowledgeBaseChecked, KnowledgeBaseRan
from tui.screens.knowledge_bases import KnowledgeBaseScreen
from tui.widgets.clips_editor import ClipsEditor
from tui.widgets.file_tree import FileTree

BROKEN = """(deftemplate applicant (slot name) (slot income (type NUMBER)) (slot debt (type NUMBER)))
(deftemplate decision (slot action))

(defrule approve
  (applicant (income ?i&:(>= ?i 50000))
  =>
  (assert (decision (action approve))))
"""


class RecordingApp(WorkbenchApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.events: list = []

    def on_knowledge_base_checked(self, message: KnowledgeBaseChecked) -> None:
        self.events.append(message)

    def on_knowledge_base_ran(self, message: KnowledgeBaseRan) -> None:
        self.events.append(message)


async def test_fix_a_rule_error_in_the_editor_then_run(backend, workspace, helpers):
    (workspace / "knowledge_bases" / "credit.clp").write_text(BROKEN)
    app = RecordingApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        assert isinstance(screen, KnowledgeBaseScreen)
        tree = screen.query_one(FileTree)
        assert tree.select_path("credit.clp")
        await pilot.press("enter")
        await helpers.settle(pilot)
        editor = screen.query_one(ClipsEditor)
        assert editor.text == BROKEN and app.focused is editor

        await pilot.press("ctrl+s")  # save and check: the missing ')' is reported with line and column
        await helpers.settle(pilot)
        checked = [e for e in app.events if isinstance(e, KnowledgeBaseChecked)]
        assert checked and checked[-1].diagnostics, "the broken file must produce diagnostics"
        first = checked[-1].diagnostics[0]
        assert first["line"] >= 5 and first["column"] >= 1
        assert editor.markers and editor.markers[0].line == first["line"]
        assert "✗ " in str(screen.query_one("#kb-status").render())

        # fix: close the pattern at the end of line 5, where the ')' is missing
        await pilot.press("f8")  # jumps to the error
        assert editor.cursor_location[0] == first["line"] - 1
        editor.move_cursor((4, len(editor.document.get_line(4))))
        await pilot.press(")")
        await pilot.press("ctrl+s")
        await helpers.settle(pilot)
        checked = [e for e in app.events if isinstance(e, KnowledgeBaseChecked)]
        assert checked[-1].diagnostics == [] and checked[-1].saved
        assert editor.markers == []
        assert "(applicant (income ?i&:(>= ?i 50000)))" in (workspace / "knowledge_bases" / "credit.clp").read_text()

        # run the fixed rules on a fact typed as JSON
        await pilot.press("ctrl+r")
        await pilot.pause()
        facts = app.screen.query_one("#facts-text")
        facts.load_text('[{"template": "applicant", "slots": {"name": "ann", "income": 60000, "debt": 10}}]')
        await pilot.press("ctrl+r")
        await helpers.settle(pilot)
        ran = [e for e in app.events if isinstance(e, KnowledgeBaseRan)]
        assert ran and [f["rule"] for f in ran[-1].result["firings"]] == ["approve"]
        assert screen.query_one("#kb-firings").row_count == 1
        assert screen.query_one("#kb-memory").row_count == 2  # applicant and the decision


async def test_unsaved_edits_survive_switching_files(backend, helpers):
    app = WorkbenchApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.open_file("loan_gate.clp")
        await helpers.settle(pilot)
        editor = screen.query_one(ClipsEditor)
        editor.insert("; note\n", (0, 0))
        screen.open_file("loan_policy.clp")
        await helpers.settle(pilot)
        assert not screen.modified
        screen.open_file("loan_gate.clp")
        await helpers.settle(pilot)
        assert editor.text.startswith("; note\n") and screen.modified
        await pilot.press("ctrl+r")  # running unsaved rules is refused with a notification, not a crash
        await pilot.pause()
        assert any("save first" in n.message for n in app._notifications)


async def test_new_rule_file(backend, workspace, helpers):
    app = WorkbenchApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        await pilot.press("ctrl+n")
        await pilot.pause()
        await pilot.press(*"triage", "enter")
        await helpers.settle(pilot)
        screen = app.screen
        assert screen.path == "triage.clp" and (workspace / "knowledge_bases" / "triage.clp").is_file()
        await pilot.press("f5")
        await helpers.settle(pilot)
        assert screen.diagnostics == []  # the starter text is valid CLIPS
