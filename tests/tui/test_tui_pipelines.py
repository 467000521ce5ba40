"""Pipelines screen: build a pipeline with the keyboard, validate (errors at the node), save versions, browse them."""

from __future__ import annotations

from textual.widgets import Input, OptionList, Select

from tui.app import WorkbenchApp
from tui.messages import PipelineSaved
from tui.screens.node_form import NodeForm
from tui.screens.pipelines import PipelinesScreen
from tui.widgets.dag_view import DagView


class RecordingApp(WorkbenchApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.saved: list[PipelineSaved] = []

    def on_pipeline_saved(self, message: PipelineSaved) -> None:
        self.saved.append(message)


async def fill_node(pilot, app, values: dict[str, str], node_type: str | None = None) -> None:
    form = app.screen
    assert isinstance(form, NodeForm)
    if node_type is not None:
        form.query_one("#f-type", Select).value = node_type
        await pilot.pause()
    for field, text in values.items():
        form.query_one(f"#f-{field}", Input).value = text
    await pilot.press("ctrl+s")
    await pilot.pause()


async def test_build_validate_and_save_a_pipeline(backend, helpers):
    app = RecordingApp(backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        assert isinstance(screen, PipelinesScreen)
        assert [o.id for o in screen.query_one("#pl-list", OptionList).options] == ["loan"]

        await pilot.press("n")
        await pilot.pause()
        await pilot.press(*"screening", "enter")
        await pilot.pause()
        dag = screen.query_one(DagView)
        assert screen.doc["name"] == "screening" and dag.selected == "input"

        # input node: a schema and the fact it asserts
        await pilot.press("enter")
        await pilot.pause()
        await fill_node(
            pilot,
            app,
            {
                "schema": "{type: object, required: [name, income, debt], properties: {name: {type: string}, income: "
                "{type: number}, debt: {type: number}}}",
                "facts": "[{template: applicant, slots: {name: input.name, income: input.income, debt: input.debt}}]",
            },
        )
        # add a rules node after it, pointing at a knowledge base that does not exist (fixed below)
        await pilot.press("a")
        await pilot.pause()
        await fill_node(pilot, app, {"id": "policy", "knowledge_base": "no_such_kb"})
        assert dag.selected == "policy"
        await pilot.press("a")
        await pilot.pause()
        await fill_node(
            pilot,
            app,
            {"id": "result", "fields": "{action: {expr: decision.action, default: none}}"},
            node_type="output",
        )
        assert [(e["from"], e["to"]) for e in screen.doc["edges"]] == [("input", "policy"), ("policy", "result")]
        assert "[result·output]" in str(dag.render())

        # saving validates first: nothing stored, and the problem names the node
        await pilot.press("ctrl+s")
        await helpers.settle(pilot)
        assert not app.saved
        assert any(i["node"] == "policy" and "knowledge_base" in i["field"] for i in screen.issues)
        assert "policy" in dag.bad
        # Enter on the problem opens that node's form with the field marked
        problems = screen.query_one("#pl-problems", OptionList)
        problems.focus()
        problems.highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, NodeForm) and form.query_one("#f-knowledge_base", Input).has_class("-problem")
        await fill_node(pilot, app, {"knowledge_base": "loan_policy"})

        await pilot.press("v")
        await helpers.settle(pilot)
        assert screen.issues == []
        await pilot.press("ctrl+s")
        await helpers.settle(pilot)
        assert len(app.saved) == 1 and app.saved[0].created
        first = app.saved[0].version
        assert [v["version"] for v in backend.pipeline_versions("screening")] == [first]

        # a second version: connect the input straight to the output too, save again
        dag.selected = "input"
        await pilot.press("c")
        await pilot.pause()
        choices = app.screen.query_one(OptionList)
        choices.highlighted = [o.id for o in choices.options].index("result")
        await pilot.press("enter")
        await pilot.pause()
        assert ("input", "result") in [(e["from"], e["to"]) for e in screen.doc["edges"]]
        await pilot.press("ctrl+s")
        await helpers.settle(pilot)
        assert len(app.saved) == 2 and app.saved[1].version != first
        versions = screen.query_one("#pl-versions", OptionList)
        assert [o.id for o in versions.options] == [app.saved[1].version, first]  # newest first

        # browse: load the first version back
        versions.focus()
        versions.highlighted = 1
        await pilot.press("enter")
        await helpers.settle(pilot)
        assert screen.version == first
        assert ("input", "result") not in [(e["from"], e["to"]) for e in screen.doc["edges"]]

        # roll back: point production at the first version; the name now resolves to it
        versions.highlighted = 1
        await pilot.press("p")
        await pilot.pause()
        await pilot.press("enter")  # "production" is the first choice
        await helpers.settle(pilot)
        assert [v["stages"] for v in backend.pipeline_versions("screening")] == [[], ["production"]]
        assert "production" in str(versions.get_option_at_index(1).prompt)
        assert backend.get_pipeline("screening") == backend.get_pipeline("screening", first)


async def test_delete_and_disconnect_nodes(backend, helpers):
    app = WorkbenchApp(backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.open_pipeline("loan")
        await helpers.settle(pilot)
        dag = screen.query_one(DagView)
        assert dag.order()[:2] == ["applicant", "screen"]
        await pilot.press("down")  # focus is on the graph: select the next node
        assert dag.selected == "screen"
        await pilot.press("x")
        await pilot.pause()
        labels = [str(o.prompt) for o in app.screen.query_one(OptionList).options]
        assert "screen → policy (when assess)" in labels
        await pilot.press("escape")
        dag.selected = "why"
        await pilot.press("d")
        await pilot.pause()
        assert "why" not in [n["id"] for n in screen.doc["nodes"]]
        assert all("why" not in (e["from"], e["to"]) for e in screen.doc["edges"])
        assert screen.dirty
