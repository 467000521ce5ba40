"""A fact an input node sends with a slot left to its default (`tags: input.tags`, the input without
`tags`: the slot is None, CLIPS holds the multislot's default `()`) was not recognised as given in the
rules node: the explanation derived `(item (name w) (qty 2) (tags ))` from "deffacts" (then, recognised
by id but looked up upstream by CLIPS's content, from "unknown"). It is the input node's fact."""

from __future__ import annotations

from workbench import Pipeline, Workbench

KB = """
(deftemplate item (slot name) (slot qty (type INTEGER)) (multislot tags) (slot note (default none)))
(deftemplate alert (slot name))
(deffacts stock (item (name apple) (qty 3) (tags fruit)))
(defrule low (item (name ?n) (qty ?q&:(< ?q 5))) => (assert (alert (name ?n))))
"""


def test_an_input_fact_with_defaulted_slots_is_explained_as_input(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path}/db.sqlite3")
    (tmp_path / "inv.clp").write_text(KB)
    p = Pipeline("invp")
    p.add_node(
        "in",
        "input",
        facts=[{"template": "item", "slots": {"name": "input.name", "qty": "input.qty", "tags": "input.tags"}}],
    )
    p.add_node("r", "rules", knowledge_base="inv")
    p.add_node("why", "explain", targets=["alert"])
    p.add_node("out", "output", fields={"n": "count('alert')"})
    p.connect("in", "r")
    p.connect("r", "why")
    p.connect("why", "out")
    with Workbench(knowledge_base_dir=tmp_path, pipeline_dir=tmp_path, model_catalog=tmp_path / "none.yaml") as wb:
        for given in ({"name": "w", "qty": 2}, {"name": "w", "qty": 2, "tags": ["x"]}):
            run = wb.run_sync(p, given, explain=True)
            assert run.outputs == {"n": 2}
            (w,) = [d for d in run.explanation["derivations"] if d["fact"] == "(alert (name w))"]
            (premise,) = w["premises"]
            assert (premise["source"], premise["node"]) == ("input", "in"), premise
            assert premise["fact"].startswith("(item (name w) (qty 2) (tags ")
            (apple,) = [d for d in run.explanation["derivations"] if d["fact"] == "(alert (name apple))"]
            assert apple["premises"][0]["source"] == "deffacts"
