"""Keyboard alone, no traps (issue 22 and the TUI items of issue 20): focus never lands somewhere
invisible, the first item is highlighted, digits switch screens only from lists, esc leaves a text
field and closes every dialog and the Keys panel, keys are shown as typed everywhere, every action is
in the palette; the graph editor offers only acyclic edges, asks gate branches, undoes; a failed
load shows its whole reason. Each test holds one trap seen in tests/regressions/cases/tui/."""

from __future__ import annotations

from textual.widgets import DataTable, Input, OptionList

from tui.app import WorkbenchApp
from tui.backend import BackendError
from tui.inprocess_backend import InProcessBackend
from tui.screens.dialogs import ChoiceDialog
from tui.screens.help import HelpScreen
from tui.screens.node_form import NodeForm
from tui.widgets.clips_editor import ClipsEditor
from tui.widgets.dag_view import DagView
from tui.widgets.metric_spark import bar_rows


async def test_run_form_first_tab_lands_on_a_visible_field_and_esc_leaves_it(backend, helpers):
    app = WorkbenchApp(backend, mode="run")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.choose("loan")
        await helpers.settle(pilot)
        screen.query_one("#run-pipeline").focus()
        await pilot.press("tab")
        assert app.focused is screen.query_one("#in-name", Input)  # not the form's scroll container
        await pilot.press("2")  # a digit in a text field types
        assert app.current_mode == "run" and screen.query_one("#in-name", Input).value.endswith("2")
        await pilot.press("escape")  # leaves the field for the pipeline list
        assert app.focused is screen.query_one("#run-pipeline")
        await pilot.press("2")
        await helpers.settle(pilot)
        assert app.current_mode == "kb"


async def test_digits_do_not_switch_screens_under_a_dialog(backend, helpers):
    app = WorkbenchApp(backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        app.screen.open_pipeline("loan")
        await helpers.settle(pilot)
        await pilot.press("c")  # connect: a choice dialog
        await helpers.settle(pilot)
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("2")
        await helpers.settle(pilot)
        assert app.current_mode == "pipelines" and isinstance(app.screen, ChoiceDialog)
        await pilot.press("escape")
        await helpers.settle(pilot)
        assert not isinstance(app.screen, ChoiceDialog)


async def test_pipelines_list_starts_highlighted_and_the_first_enter_opens(backend, helpers):
    app = WorkbenchApp(backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        listing = app.screen.query_one("#pl-list", OptionList)
        assert listing.highlighted == 0 and app.focused is listing
        await pilot.press("enter")
        await helpers.settle(pilot)
        assert app.screen.doc is not None and app.screen.doc["name"] == "loan"
        shown = {b.binding.key: b.binding.show for b in app.screen.active_bindings.values()}
        assert shown.get("p") and shown.get("ctrl+z")  # promote and undo are in the footer


async def test_keys_as_typed_in_help_palette_and_footer_and_esc_closes_the_keys_panel(backend, helpers):
    app = WorkbenchApp(backend, mode="pipelines")
    async with app.run_test(size=(80, 24)) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        await pilot.press("f1")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = {r[0]: r[1] for r in help_screen.rows}
        assert keys["v"] == "Validate" and keys["p"] == "Promote" and keys["ctrl+s"] == "Save version"
        assert not any(k.isupper() for k in keys)
        notes, box = help_screen.query_one("#help-notes"), help_screen.query_one("#help-box")
        assert notes.region.bottom <= box.region.bottom and notes.virtual_size.height <= notes.size.height
        await pilot.press("escape")
        await pilot.pause()

        titles = [c.title for c in app.get_system_commands(screen)]
        assert "Help (f1)" in titles and "Validate (v)" in titles and "Promote (p)" in titles
        assert "Go to Rules (2)" in titles
        assert app.get_key_display(screen.active_bindings["ctrl+s"].binding) == "ctrl+s"

        app.action_show_help_panel()
        await pilot.pause()
        assert screen.query("HelpPanel")
        await pilot.press("escape")
        await pilot.pause()
        assert not screen.query("HelpPanel")


async def test_palette_runs_a_screen_action(backend, helpers):
    app = WorkbenchApp(backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        command = next(c for c in app.get_system_commands(app.screen) if c.title == "New (n)")
        command.callback()
        await helpers.settle(pilot)
        assert type(app.screen).__name__ == "PromptDialog"
        await pilot.press("escape")


async def test_gate_edges_ask_for_a_known_branch_connect_stays_acyclic_and_undo(backend, helpers):
    app = WorkbenchApp(backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.open_pipeline("loan")
        await helpers.settle(pilot)
        dag = screen.query_one(DagView)
        dag.selected = "policy"
        await pilot.press("c")
        await helpers.settle(pilot)
        offered = [o.id for o in app.screen.query_one(OptionList).options]
        # applicant and screen reach policy: an edge to them would close a cycle; why is a target already
        assert offered == ["result"]
        await pilot.press("escape")
        await helpers.settle(pilot)

        dag.selected = "screen"
        edges_before = [dict(e) for e in screen.doc["edges"]]
        await pilot.press("c")
        await helpers.settle(pilot)
        assert [o.id for o in app.screen.query_one(OptionList).options] == ["why"]
        await pilot.press("enter")
        await helpers.settle(pilot)
        branches = app.screen.query_one(OptionList)
        assert [o.id for o in branches.options][:2] == ["assess", "reject"] and branches.highlighted == 0
        await pilot.press("enter")
        await helpers.settle(pilot)
        assert {"from": "screen", "to": "why", "when": "assess"} in screen.doc["edges"]

        await pilot.press("ctrl+z")
        await helpers.settle(pilot)
        assert screen.doc["edges"] == edges_before

        await pilot.press("a")  # a node after the gate: its edge asks for a branch too
        await helpers.settle(pilot)
        form = app.screen
        assert isinstance(form, NodeForm)
        form.query_one("#f-knowledge_base", Input).value = "loan_policy"
        await pilot.press("ctrl+s")
        await helpers.settle(pilot)
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("down", "enter")  # reject
        await helpers.settle(pilot)
        new = [e for e in screen.doc["edges"] if e["from"] == "screen" and e["to"] == "node1"]
        assert new == [{"from": "screen", "to": "node1", "when": "reject"}]
        await pilot.press("ctrl+z")
        await helpers.settle(pilot)
        assert screen.doc["edges"] == edges_before and "node1" not in {n["id"] for n in screen.doc["nodes"]}


async def test_node_form_has_no_invisible_tab_stop(backend, helpers):
    app = WorkbenchApp(backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        app.screen.open_pipeline("loan")
        await helpers.settle(pilot)
        app.screen.query_one(DagView).selected = "policy"
        await pilot.press("enter")
        await helpers.settle(pilot)
        form = app.screen
        assert isinstance(form, NodeForm) and app.focused is form.query_one("#f-id", Input)
        seen = []
        for _ in range(4):
            await pilot.press("tab")
            seen.append(app.focused.id)
        assert seen == ["f-type", "f-description", "f-join", "f-knowledge_base"]
        await pilot.press("escape")
        await helpers.settle(pilot)
        assert not isinstance(app.screen, NodeForm)


class LongFailure(InProcessBackend):
    REASON = (
        "PipelineValidationError: node 'policy', field 'knowledge_base': knowledge base 'loan_policy' not "
        "found: looked for /project/knowledge_bases/loan_policy.clp, /project/knowledge_bases/loan_policy/*.clp "
        "— the project folder has its own knowledge_bases/; set WORKBENCH_KNOWLEDGE_BASE_DIR to use the demo's"
    )

    def get_pipeline(self, name, version=None):
        raise BackendError(self.REASON)


async def test_a_failed_pipeline_load_shows_its_whole_reason(workbench, helpers):
    app = WorkbenchApp(LongFailure(workbench), mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        app.screen.open_pipeline("loan")
        await helpers.settle(pilot)
        shown = str(app.screen.query_one("#pl-node").render())
        assert " ".join(LongFailure.REASON.split()) in " ".join(shown.split())


async def test_after_running_rules_the_focus_leaves_the_editor(backend, helpers):
    app = WorkbenchApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.open_file("loan_policy.clp")
        await helpers.settle(pilot)
        assert app.focused is screen.query_one(ClipsEditor)
        await pilot.press("ctrl+r")
        await helpers.settle(pilot)
        app.screen.query_one("#facts-text").load_text(
            '[{"template": "applicant", "slots": {"name": "a", "income": 90000, "debt": 1}}]'
        )
        await pilot.press("ctrl+r")
        await helpers.settle(pilot)
        assert app.focused is screen.query_one("#kb-firings", DataTable)
        await pilot.press("1")  # a digit from the firings table switches screens; nothing typed into the rules
        await helpers.settle(pilot)
        assert app.current_mode == "pipelines"
        assert "1" not in screen.query_one(ClipsEditor).text.splitlines()[0][:1]


async def test_esc_in_the_rule_editor_goes_to_the_file_tree(backend, helpers):
    app = WorkbenchApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.open_file("loan_policy.clp")
        await helpers.settle(pilot)
        await pilot.press("escape")
        assert app.focused is not screen.query_one(ClipsEditor)


def test_sparkline_bars_start_from_zero():
    steady = bar_rows([30.0, 30.0, 30.0], width=3, height=1)
    assert steady == ["███"]  # a steady rate is a steady bar, not full/empty
    assert bar_rows([0.0, 10.0], width=2, height=1) == [" █"]
    two = bar_rows([5.0, 10.0], width=2, height=2)
    assert two[1] == "██" and two[0] == " █"


async def test_history_keeps_the_cursor_on_its_run_after_coming_back(backend, helpers):
    runs = [backend.run_pipeline("loan", {"name": n, "income": 60000, "debt": 1}) for n in ("a", "b", "c")]
    app = WorkbenchApp(backend, mode="history")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        table = app.screen.query_one("#hist-table", DataTable)
        table.move_cursor(row=2)
        await pilot.press("enter")
        await helpers.settle(pilot)
        await pilot.press("escape")
        await helpers.settle(pilot)
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == runs[0]["run_id"]


async def test_esc_stops_a_consultation_then_leaves_the_answer_field(backend, helpers):
    from textual.widgets import RichLog

    app = WorkbenchApp(backend, mode="ask")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        await pilot.press("ctrl+r")
        await helpers.settle(pilot)
        app.screen.query_one("#facts-kb", Input).value = "zoo"
        app.screen.query_one("#facts-goal", Input).value = "(animal (kind ?k))"
        await pilot.press("ctrl+r")
        await helpers.wait_until(pilot, lambda: screen.question is not None, what="the first question")
        await pilot.press("escape")
        await helpers.wait_until(pilot, lambda: not screen.running, what="the consultation to stop")
        assert screen.result["state"] == "cancelled" and screen.question is None
        assert "stopped" in [line.text for line in screen.query_one(RichLog).lines]
        assert app.focused is screen.query_one("#ask-input", Input)
        await pilot.press("escape")  # nothing running: esc leaves the field
        assert app.focused is screen.query_one("#ask-log")
