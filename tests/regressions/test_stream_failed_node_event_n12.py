"""A streamed run (`"stream": true`, `Workbench.stream`) sent `event: node` for every node that finished
but none for the node that failed: the stream went from the last successful node to the `result` event.
The failing node now has its event, with status "failed" and the error."""

from __future__ import annotations

from workbench import Pipeline, Workbench

KB = "(deftemplate item (slot name (type SYMBOL)) (slot qty (type INTEGER)))\n(defrule r (item) =>)\n"


def test_the_failing_node_has_its_node_event(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path}/db.sqlite3")
    (tmp_path / "inv.clp").write_text(KB)
    p = Pipeline("s")
    p.add_node("a", "input", facts=[{"template": "item", "slots": {"name": "input.n", "qty": "input.q"}}])
    p.add_node("b", "rules", knowledge_base="inv")
    p.add_node("o", "output", fields={"n": "count('item')"})
    p.connect("a", "b")
    p.connect("b", "o")

    async def events(wb: Workbench, given: dict) -> list[dict]:
        return [e async for e in wb.stream(p, given)]

    with Workbench(knowledge_base_dir=tmp_path, pipeline_dir=tmp_path, model_catalog=tmp_path / "n.yaml") as wb:
        bad = wb._sync(events(wb, {"n": "x", "q": "many"}))  # on the workbench's own loop, as run_sync
        nodes = [(e["node"], e["status"]) for e in bad if e["event"] == "node"]
        assert nodes == [("a", "succeeded"), ("b", "failed")]
        (failed,) = [e for e in bad if e["event"] == "node" and e["status"] == "failed"]
        assert "slot qty of item takes INTEGER" in failed["error"] and failed["type"] == "rules"
        assert bad[-1]["event"] == "result" and bad[-1]["run"]["failed_node"] == "b"
