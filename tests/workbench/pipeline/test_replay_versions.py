"""Replay with an edited knowledge base, versions and stages, and the CLI over the same store."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app
from workbench.pipeline import Pipeline

from .conftest import EXAMPLE, digit_pixels

STRICT = (
    (EXAMPLE / "confidence_review.clp")
    .read_text()
    .replace(">= ?s 0.5", ">= ?s 0.9999")
    .replace("< ?s 0.5", "< ?s 0.9999")
)


async def test_replay_with_an_edited_rule_changes_the_outcome(wb, tmp_path):
    original = await wb.run("digits_review", {"pixels": digit_pixels(4)})
    assert original.outputs["action"] == "accept"  # score 0.99959 >= 0.5
    edited = tmp_path / "strict_review.clp"
    edited.write_text(STRICT)
    res = await wb.replay(original.run_id, knowledge_bases={"confidence_review": str(edited)})
    assert res.replay.replay_of == original.run_id and res.replay.outputs["action"] == "review"
    assert res.changes["outputs"]["action"] == {"before": "accept", "after": "review"}
    assert res.changes["rules"]["review"]["added"] == ["unsure"] and res.changes["rules"]["review"]["removed"] == [
        "confident"
    ]
    assert set(res.changes["knowledge_base_versions"]) == {"confidence_review"}
    assert wb.get_run(res.replay.run_id).replay_of == original.run_id
    same = await wb.replay(original.run_id)  # unchanged rules: same outcome
    assert not same.changed
    # the shared library was not touched by the override
    assert (await wb.run("digits_review", {"pixels": digit_pixels(4)})).outputs["action"] == "accept"


async def test_an_unrecorded_replay_compares_its_own_firings(wb, tmp_path):
    """n11 #13: `runs replay RUN --no-record` (`record=False`) reported every gate and rule as changed (fired
    [...] -> []): the new run's trace was read from the store, where an unrecorded run has none. It is the
    run's own trace now: an unedited replay changes nothing, an edited one the rules that changed."""
    original = await wb.run("digits_review", {"pixels": digit_pixels(4)})
    same = await wb.replay(original.run_id, record=False)
    assert same.replay.run_id is None and not same.changed, same.changes
    assert [e.kind for e in same.replay.trace].count("rule_firing") >= 1
    edited = tmp_path / "strict_review.clp"
    edited.write_text(STRICT)
    res = await wb.replay(original.run_id, knowledge_bases={"confidence_review": str(edited)}, record=False)
    review = res.changes["rules"]["review"]
    assert review["added"] == ["unsure"] and review["removed"] == ["confident"], res.changes


async def test_versions_stages_and_rollback(wb):
    p = Pipeline.from_file(EXAMPLE / "digits_review.yaml")
    v1 = wb.save_pipeline(p, stage="production")
    p.nodes["result"].config["fields"]["reason"] = "coalesce(decision.reason, 'no ink')"
    v2 = wb.save_pipeline(p)
    assert v1 != v2 and [r["version"] for r in wb.pipeline_versions("digits_review")] == [v1, v2]
    assert wb.get_pipeline("digits_review").version == v1  # production wins over the newest
    assert wb.promote("digits_review", v2[:10]) == v2
    assert (await wb.run("digits_review", {"pixels": [0.0] * 64})).outputs["reason"] == "no ink"
    wb.promote("digits_review", v1)  # rollback
    r = await wb.run("digits_review", {"pixels": [0.0] * 64})
    assert r.version == v1 and r.outputs["reason"] == "blank image"
    assert wb.get_pipeline("digits_review", v2).version == v2
    assert {i.name: i.stages for i in wb.list_pipelines()}["digits_review"] == {"production": v1}


def test_cli_check_show_run_runs_replay(dirs, tmp_path, monkeypatch):
    kb_dir, pipes = dirs
    monkeypatch.setenv("WORKBENCH_KNOWLEDGE_BASE_DIR", str(kb_dir))
    monkeypatch.setenv("WORKBENCH_PIPELINE_DIR", str(pipes))
    from workbench.config import get_settings

    get_settings.cache_clear()
    cli = CliRunner()
    ok = cli.invoke(app, ["pipeline", "check", str(pipes / "family.yaml")])
    assert ok.exit_code == 0, ok.output
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        (pipes / "family.yaml").read_text().replace("knowledge_base: runaway", "knowledge_base: missing_kb")
    )
    bad = cli.invoke(app, ["pipeline", "check", str(broken)])
    assert bad.exit_code == 1 and f"{broken}:" in bad.output and "node 'guard', field 'knowledge_base'" in bad.output
    shown = cli.invoke(app, ["pipeline", "show", "family"])
    assert shown.exit_code == 0 and "[goal] who" in shown.output
    one = cli.invoke(app, ["run", "family", "--input", json.dumps({"parents": [["a", "b"], ["b", "otto"]]}), "--json"])
    assert one.exit_code == 0, one.output
    rec = json.loads(one.stdout.strip().splitlines()[-1])
    assert rec["outputs"]["grandparents"] == 1
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"parents": [["a", "b"]]}\n{"parents": [["a", "b"]], "start": -1}\n{"parents": 3}\n')
    many = cli.invoke(app, ["run", "family", "--input-file", str(lines)])
    assert many.exit_code == 1
    outs = [json.loads(x) for x in many.stdout.strip().splitlines() if x.startswith("{")]
    assert [o.get("status") for o in outs[:2]] == ["succeeded", "failed"] and "input.parents: 3 is not" in outs[2][
        "error"
    ]
    listed = cli.invoke(app, ["runs", "list", "--json"])
    assert len(json.loads(listed.stdout)) == 3
    show = cli.invoke(app, ["runs", "show", rec["run_id"][:8], "--json"])
    doc = json.loads(show.stdout)
    assert doc["run_id"] == rec["run_id"] and any(e["kind"] == "rule_firing" for e in doc["trace"])
    edited = tmp_path / "family.clp"
    edited.write_text(
        (kb_dir / "family.clp").read_text().replace("(assert (grandparent ?a ?c))", "(assert (grandparent ?c ?a))")
    )
    rp = cli.invoke(app, ["runs", "replay", rec["run_id"], "--kb", f"family={edited}", "--json"])
    assert rp.exit_code == 0, rp.output
    ch = json.loads(rp.stdout)["changes"]
    assert ch["outputs"]["first"] == {"before": "a", "after": "otto"}
