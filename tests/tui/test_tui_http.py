"""`workbench tui --url`: the same screens over the REST API (FastAPI app served in-process by TestClient)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tui.app import WorkbenchApp
from tui.http_backend import HttpBackend
from tui.messages import KnowledgeBaseChecked, PipelineSaved, RunFinished
from tui.widgets.clips_editor import ClipsEditor
from tui.widgets.explanation_tree import ExplanationTree


@pytest.fixture
def http_backend(workbench):
    from api.app import create_app
    from workbench.serving import Serving

    app = create_app(serving=Serving(workbench, load_models=False, serve_demo_lm=False))
    with TestClient(app) as client:
        backend = HttpBackend("http://testserver", client=client)
        backend.ping()
        yield backend


class RecordingApp(WorkbenchApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.events: list = []

    def on_pipeline_saved(self, m: PipelineSaved) -> None:
        self.events.append(m)

    def on_run_finished(self, m: RunFinished) -> None:
        self.events.append(m)

    def on_knowledge_base_checked(self, m: KnowledgeBaseChecked) -> None:
        self.events.append(m)


async def test_screens_over_http(http_backend, workspace, helpers):
    app = RecordingApp(http_backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        screen.open_pipeline("loan")
        await helpers.settle(pilot)
        assert screen.doc["name"] == "loan" and screen.version is None  # a file, not stored yet
        await pilot.press("ctrl+s")
        await helpers.settle(pilot)
        saved = [e for e in app.events if isinstance(e, PipelineSaved)]
        assert saved and saved[-1].created
        assert [v["version"] for v in http_backend.pipeline_versions("loan")] == [saved[-1].version]

        # a reference the server cannot resolve: refused with 422, shown at the node
        node = next(n for n in screen.doc["nodes"] if n["id"] == "policy")
        node["knowledge_base"] = "missing_kb"
        screen.dirty = True
        await pilot.press("ctrl+s")
        await helpers.settle(pilot)
        assert any(i.get("node") == "policy" for i in screen.issues)
        assert len(http_backend.pipeline_versions("loan")) == 1

        await pilot.press("3")  # Run
        await helpers.settle(pilot)
        run = app.screen
        run.choose("loan")
        await helpers.settle(pilot)
        for field, value in {"name": "ann", "income": "80000", "debt": "10"}.items():
            run.query_one(f"#in-{field}").value = value
        await pilot.press("ctrl+r")
        await helpers.settle(pilot)
        result = [e for e in app.events if isinstance(e, RunFinished)][-1].result
        assert result["outputs"]["action"] == "approve"
        assert run.query_one(ExplanationTree).root.children

        app.set_focus(None)
        await pilot.press("2")  # Rules: an upload the server refuses shows the located error
        await helpers.settle(pilot)
        kb = app.screen
        assert "loan_policy.clp" in http_backend.list_kb_files()
        kb.open_file("loan_policy.clp")
        await helpers.settle(pilot)
        editor = kb.query_one(ClipsEditor)
        good = editor.text
        editor.load_text(good.replace("(slot reason))", "(slot reason)", 1))
        await pilot.press("ctrl+s")
        await helpers.settle(pilot)
        checked = [e for e in app.events if isinstance(e, KnowledgeBaseChecked)][-1]
        assert checked.diagnostics and not checked.saved and editor.markers
        assert (workspace / "knowledge_bases" / "loan_policy.clp").read_text() == good  # nothing written


async def test_connection_banner_follows_the_server_and_errors_say_what_to_do(
    workbench, live_server_factory, helpers, monkeypatch
):
    import tui.http_backend as http_backend_module
    from tui.widgets.connection_banner import ConnectionBanner

    server = live_server_factory(workbench)
    backend = HttpBackend(server.url, timeout_s=10.0)
    app = RecordingApp(backend, mode="pipelines")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        banner = app.screen.query_one(ConnectionBanner)
        assert "connected to" in str(banner.render())

        server.stop()  # the server goes away
        app.check_connection()
        await helpers.wait_until(pilot, lambda: app.connection.get("state") == "reconnecting", what="reconnecting")
        assert "reconnecting" in str(banner.render())
        app.screen.load_list()
        await helpers.settle(pilot)
        failure = [n.message for n in app._notifications][-1]
        assert "cannot reach the server" in failure and "workbench serve" in failure
        assert "reconnects by itself" in failure and "Errno" not in failure

        monkeypatch.setattr(http_backend_module, "DISCONNECTED_AFTER_S", 0.0)
        app.check_connection()
        await helpers.wait_until(pilot, lambda: app.connection.get("state") == "disconnected", what="disconnected")
        assert "disconnected" in str(banner.render())

        live_server_factory(workbench, port=server.port)  # back on the same address
        app.check_connection()
        await helpers.wait_until(pilot, lambda: app.connection.get("state") == "connected", what="reconnected")
        assert "connected to" in str(banner.render())
    backend.close()
