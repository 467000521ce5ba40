"""`wb.validate(p)` of a pipeline built in code returned [] for a name that breaks the naming rule
("a.b", "bad name!", "../x", ""), while `wb.run_sync(p, ...)` refused it with InvalidNameError: the
name rule was applied when a YAML document was parsed, never to a `Pipeline` built with its constructor."""

from __future__ import annotations

from workbench import Pipeline, Workbench


def tiny(name: str) -> Pipeline:
    p = Pipeline(name)
    p.add_node("a", "input")
    p.add_node("o", "output", fields={"x": "input.q"})
    p.connect("a", "o")
    return p


def test_validate_reports_a_bad_pipeline_name(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATABASE_URL", f"sqlite:///{tmp_path}/db.sqlite3")
    with Workbench(knowledge_base_dir=tmp_path, pipeline_dir=tmp_path, model_catalog=tmp_path / "none.yaml") as wb:
        for name in ["a.b", "bad name!", "../x", ""]:
            issues = wb.validate(tiny(name))
            assert [(i.node, i.field) for i in issues] == [(None, "name")], name
            assert "a name is 1 to 64 characters" in issues[0].message
        assert wb.validate(tiny("good-name_1")) == []
