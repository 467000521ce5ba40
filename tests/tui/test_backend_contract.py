"""One contract, two backends: the same Pilot flows against the facade in this process and against a
real uvicorn server on 127.0.0.1 (`any_backend` in conftest.py). What the TUI offers in-process it
offers attached to a server: validation with references, check-only, consultations with questions,
WHY and HOW, replay with edited rules, model status and unloading, the Run form's prefill."""

from __future__ import annotations

import numpy as np
import torch
from textual.widgets import DataTable, Input, Select

from tui.app import WorkbenchApp
from tui.messages import ConsultationFinished, KnowledgeBaseChecked, RunReplayed
from tui.screens.ask import AskScreen
from tui.screens.models import ModelsScreen
from tui.screens.replay_dialog import ReplayDialog
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.clips_editor import ClipsEditor

TRAITS = """; Two independent answers, each behind one question.
;@askable
;@question "Does it have ?feature?"
(deftemplate has (slot feature) (slot answer (allowed-symbols yes no)))
(deftemplate trait (slot name))
(defrule swims (has (feature fins) (answer yes)) => (assert (trait (name swimmer))))
(defrule flies (has (feature wings) (answer yes)) => (assert (trait (name flyer))))
"""


class RecordingApp(WorkbenchApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.events: list = []

    def on_knowledge_base_checked(self, m: KnowledgeBaseChecked) -> None:
        self.events.append(m)

    def on_consultation_finished(self, m: ConsultationFinished) -> None:
        self.events.append(m)

    def on_run_replayed(self, m: RunReplayed) -> None:
        self.events.append(m)

    def of(self, kind):
        return [e for e in self.events if isinstance(e, kind)]


def rows_of(table: DataTable) -> list[list[str]]:
    return [list(map(str, table.get_row_at(i))) for i in range(table.row_count)]


async def test_validate_reports_a_missing_rule_file_before_saving(any_backend, helpers):
    app = RecordingApp(any_backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.open_pipeline("loan")
        await helpers.settle(pilot)
        next(n for n in screen.doc["nodes"] if n["id"] == "policy")["knowledge_base"] = "missing_kb"
        screen.dirty = True
        await pilot.press("v")
        await helpers.settle(pilot)
        missing = [i for i in screen.issues if (i["node"], i["field"]) == ("policy", "knowledge_base")]
        assert missing and "missing_kb" in missing[0]["message"]
        assert not any(n.message == "valid" for n in app._notifications)
        assert any_backend.pipeline_versions("loan") == []  # validating stores nothing


async def test_check_only_and_a_refused_save_keeps_the_draft(any_backend, workspace, helpers):
    on_disk = workspace / "knowledge_bases" / "loan_policy.clp"
    good = on_disk.read_text()
    app = RecordingApp(any_backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.open_file("loan_policy.clp")
        await helpers.settle(pilot)
        editor = screen.query_one(ClipsEditor)
        broken = good.replace("(slot reason))", "(slot reason)", 1)
        editor.load_text(broken)
        await pilot.press("f5")  # check only
        await helpers.settle(pilot)
        checked = app.of(KnowledgeBaseChecked)[-1]
        assert checked.diagnostics and not checked.saved
        assert checked.diagnostics[0]["file"] == "loan_policy.clp" and checked.diagnostics[0]["line"] >= 1
        assert on_disk.read_text() == good

        await pilot.press("ctrl+s")  # refused: the valid file stays, the edit stays as a draft
        await helpers.settle(pilot)
        checked = app.of(KnowledgeBaseChecked)[-1]
        assert checked.diagnostics and not checked.saved
        assert on_disk.read_text() == good
        assert editor.text == broken and editor.markers
        assert any("draft" in n.message and "not saved" in n.message for n in app._notifications)


async def ask(app, pilot, helpers, kb: str, goal: str, *, every: bool = False) -> AskScreen:
    screen = app.screen
    await pilot.press("ctrl+r")
    await helpers.settle(pilot)
    dialog = app.screen
    # the first field still to type: the knowledge base, or the goal once the knowledge base is filled in
    first = "#facts-kb" if not dialog.query_one("#facts-kb", Input).value else "#facts-goal"
    assert app.focused is dialog.query_one(first, Input)
    dialog.query_one("#facts-kb", Input).value = kb
    dialog.query_one("#facts-goal", Input).value = goal
    dialog.query_one("#facts-all").value = every
    await pilot.press("ctrl+r")
    return screen


async def test_consultation_asks_explains_and_stops_at_the_first_answer(any_backend, workspace, helpers):
    (workspace / "knowledge_bases" / "traits.clp").write_text(TRAITS)
    app = RecordingApp(any_backend, mode="ask")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = await ask(app, pilot, helpers, "zoo", "(animal (kind ?k))")
        await helpers.wait_until(pilot, lambda: screen.question is not None, what="the first question")
        assert screen.question.text == "Does the animal have feathers?" and screen.question.choices[:2] == ["yes", "no"]
        await pilot.press(*"no", "enter")
        await helpers.wait_until(
            pilot, lambda: screen.question is not None and "fur" in screen.question.text, what="the fur question"
        )
        await pilot.press(*"why", "enter")
        await helpers.wait_until(pilot, lambda: "WHY is this asked?" in transcript(screen), what="WHY")
        assert "mammal" in transcript(screen).split("WHY is this asked?")[-1]
        await pilot.press(*"yes", "enter")
        await helpers.wait_until(pilot, lambda: bool(app.of(ConsultationFinished)), what="the conclusion")
        assert [a["bindings"] for a in app.of(ConsultationFinished)[-1].result["answers"]] == [{"k": "mammal"}]
        await pilot.press(*"how", "enter")
        await helpers.wait_until(pilot, lambda: "HOW answer 1 was proved:" in transcript(screen), what="HOW")
        how = transcript(screen).split("HOW answer 1 was proved:")[-1]
        assert "by rule mammal" in how and "answered by person" in how

        # first answer only (the default): one question, one answer, done
        screen = await ask(app, pilot, helpers, "traits", "(trait (name ?n))")
        await helpers.wait_until(pilot, lambda: screen.question is not None, what="the fins question")
        await pilot.press(*"yes", "enter")
        await helpers.wait_until(pilot, lambda: len(app.of(ConsultationFinished)) == 2, what="the first answer")
        assert [a["bindings"] for a in app.of(ConsultationFinished)[-1].result["answers"]] == [{"n": "swimmer"}]

        # all answers: the first is shown as soon as it is proven, before the next question
        screen = await ask(app, pilot, helpers, "traits", "(trait (name ?n))", every=True)
        await helpers.wait_until(pilot, lambda: screen.question is not None, what="the fins question")
        await pilot.press(*"yes", "enter")
        await helpers.wait_until(
            pilot, lambda: screen.question is not None and "wings" in screen.question.text, what="the wings question"
        )
        assert "1. ?n=swimmer" in transcript(screen)  # proven before the search goes on
        await pilot.press(*"yes", "enter")
        await helpers.wait_until(pilot, lambda: len(app.of(ConsultationFinished)) == 3, what="every answer")
        answers = app.of(ConsultationFinished)[-1].result["answers"]
        assert [a["bindings"] for a in answers] == [{"n": "swimmer"}, {"n": "flyer"}]


def transcript(screen) -> str:
    from textual.widgets import RichLog

    return "\n".join(line.text for line in screen.query_one(RichLog).lines)


async def test_replay_cancel_failure_and_success(any_backend, helpers):
    first = any_backend.run_pipeline("loan", {"name": "bo", "income": 60000, "debt": 100})
    app = RecordingApp(any_backend, mode="history")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        app.screen.open_run(first["run_id"])
        await helpers.settle(pilot)
        detail = app.screen
        assert isinstance(detail, RunDetailScreen)

        async def open_editor() -> ReplayDialog:
            await pilot.press("r")
            await helpers.settle(pilot)
            if not isinstance(app.screen, ReplayDialog):  # two knowledge bases: choose loan_policy
                choices = app.screen.query_one("OptionList")
                choices.highlighted = [o.id for o in choices.options].index("loan_policy")
                await pilot.press("enter")
                await helpers.settle(pilot)
            assert isinstance(app.screen, ReplayDialog)
            return app.screen

        dialog = await open_editor()
        dialog.query_one(ClipsEditor).load_text("edited but cancelled")
        await pilot.press("escape")  # the editor has the focus; esc still cancels
        await helpers.settle(pilot)
        assert app.screen is detail and not app.of(RunReplayed)
        assert len(any_backend.list_runs()) == 1  # nothing replayed

        dialog = await open_editor()
        editor = dialog.query_one(ClipsEditor)
        editor.load_text(editor.text.replace("50000", "70000"))
        await pilot.press("ctrl+r")
        await helpers.settle(pilot)
        changes = detail.query_one("#detail-changes", DataTable)
        assert ["output action", '"approve"', '"review"'] in rows_of(changes)

        dialog = await open_editor()
        broken = dialog.query_one(ClipsEditor).text.replace("(slot reason))", "(slot reason)", 1)
        dialog.query_one(ClipsEditor).load_text(broken)
        await pilot.press("ctrl+r")
        await helpers.settle(pilot)
        # refused: the edit comes back with the problem marked, and no stale table is left
        assert isinstance(app.screen, ReplayDialog)
        assert app.screen.query_one(ClipsEditor).text == broken and app.screen.query_one(ClipsEditor).markers
        assert rows_of(changes)[0][0] == "(replay failed)" and len(rows_of(changes)) == 1
        assert len(app.of(RunReplayed)) == 1


def register_tiny(workbench):
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(2, 1))
    return workbench.register_model("tiny-risk", module, example_inputs={"x": np.zeros((1, 2), np.float32)})


async def test_models_status_and_unload(any_backend, workbench, helpers, monkeypatch):
    torch.set_num_threads(1)
    register_tiny(workbench)
    monkeypatch.setattr(ModelsScreen, "poll_s", 3600.0)
    app = RecordingApp(any_backend, mode="models")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        table = screen.query_one("#models-table", DataTable)
        rows = {r[0]: r for r in rows_of(table)}
        # Name, Kind, Version, Format, Task, Device, State: listed with its version before any request
        tiny = rows["tiny-risk"]
        assert tiny[1] == "tensor" and tiny[6] == "● ready" and len(tiny[2]) >= 8
        assert any_backend.metrics_scope in str(screen.query_one("#models-title").render())
        table.move_cursor(row=list(rows).index("tiny-risk"))
        await pilot.pause()
        await pilot.press("u")
        await helpers.settle(pilot)
        assert not workbench.catalog.is_loaded("tiny-risk")


async def test_run_form_prefills_the_last_recorded_input(any_backend, helpers):
    any_backend.run_pipeline("loan", {"name": "ann", "income": 80000, "debt": 10})
    app = RecordingApp(any_backend, mode="run")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.query_one("#run-pipeline", Select).value = "loan"
        await helpers.settle(pilot)
        assert screen.prefilled
        assert screen.query_one("#in-name", Input).value == "ann"
        assert float(screen.query_one("#in-income", Input).value) == 80000


async def test_the_replay_editor_starts_from_the_rules_the_run_used(any_backend, workbench, workspace, helpers):
    import pytest

    from tui.backend import BackendError

    on_disk = workspace / "knowledge_bases" / "loan_policy.clp"
    used = on_disk.read_text()
    workbench.upload_knowledge_base("loan_policy", used)  # an uploaded version is kept in the store
    first = any_backend.run_pipeline("loan", {"name": "bo", "income": 60000, "debt": 100})
    on_disk.write_text(used.replace("50000", "55000"))  # the file moved on since the run
    source = any_backend.run_kb_source(first["run_id"], "loan_policy")
    assert source["recorded"] and source["text"].strip() == used.strip()
    assert source["version"] == first["knowledge_base_versions"]["loan_policy"]
    gate = any_backend.run_kb_source(first["run_id"], "loan_gate")  # never stored: the current rules, said so
    assert not gate["recorded"] and "deftemplate applicant" in gate["text"]
    with pytest.raises(BackendError, match="did not use it"):
        any_backend.run_kb_source(first["run_id"], "zoo")

    app = RecordingApp(any_backend, mode="history")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        app.screen.open_run(first["run_id"])
        await helpers.settle(pilot)
        app.screen.edit_kb("loan_policy")
        await helpers.settle(pilot)
        assert isinstance(app.screen, ReplayDialog)
        assert app.screen.query_one(ClipsEditor).text.strip() == used.strip()
        await pilot.press("escape")
        await helpers.settle(pilot)
        app.screen.edit_kb("loan_gate")
        await helpers.settle(pilot)
        assert any("not stored" in n.message for n in app._notifications)
