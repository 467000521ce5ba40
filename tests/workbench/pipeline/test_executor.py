"""The executor with a real torch model behind a real dynamic batcher and real CLIPS knowledge bases:
every node type, gates that skip models, batching across concurrent runs, failures, provenance, cache."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select

from neural.errors import QueueFullError
from workbench.pipeline import InputValidationError, Pipeline
from workbench.store import RunRow, TraceEventRow

from .conftest import EXAMPLE, digit_pixels, make_workbench, unsure_pixels


def _batcher(wb):
    return wb.get_model("digits-mlp").batcher


async def test_model_gate_postprocess_output_and_explanation(wb):
    r = await wb.run("digits_review", {"id": "a1", "pixels": digit_pixels(3)}, explain=True)
    assert r.ok, r.error
    assert r.outputs == {"digit": 3, "action": "accept", "reason": "confident prediction"}
    assert r.model_versions == {"digits-mlp": wb.get_model("digits-mlp").version}
    assert set(r.knowledge_base_versions) == {"image_gate", "confidence_review"}
    assert {"image", "quality", "classify", "review", "why", "result", "total"} <= set(r.timings)
    ex = r.explanation
    assert ex["gates"][0]["branches"] == ["classify"] and ex["gates"][0]["because"][0]["rule"] == "has-ink"
    assert ex["model_calls"][0]["model"] == "digits-mlp" and ex["model_calls"][0]["batch_size"] >= 1
    decision = next(d for d in ex["derivations"] if d["fact"].startswith("(decision"))
    assert decision["rule"] == "confident" and decision["premises"][0]["source"] == "model"
    assert "(prediction (label three) (digit 3)" in decision["premises"][0]["fact"]
    low = await wb.run("digits_review", {"pixels": unsure_pixels()})
    assert low.outputs["action"] == "review" and low.outputs["reason"] == "low confidence"


async def test_gate_skips_the_model_which_receives_no_call(wb):
    b = _batcher(wb)
    b.reset_stats()
    r = await wb.run("digits_review", {"pixels": [0.0] * 64}, explain=True)
    assert r.ok, r.error
    assert r.outputs == {"digit": None, "action": "rejected", "reason": "blank image"}
    assert b.stats.calls == 0 and b.stats.requests == 0
    assert set(r.skipped) == {"classify", "review", "why"}
    assert r.explanation["skipped_models"] == ["classify"]
    trace = wb.get_trace(r.run_id)
    assert not [e for e in trace if e["kind"] == "model_call"]
    gate = next(e for e in trace if e["kind"] == "gate_decision")
    assert gate["payload"]["branches"] == ["reject"] and gate["payload"]["edges"]["classify"] is False
    skipped = next(e for e in trace if e["kind"] == "node" and e["node"] == "classify")
    assert "did not select branch 'classify'" in skipped["payload"]["reason"]
    text = wb.metrics_text().decode()
    assert 'workbench_pipeline_model_calls_skipped_total{model="digits-mlp",pipeline="digits_review"}' in text


async def test_concurrent_runs_are_batched_together(wb):
    b = _batcher(wb)
    b.reset_stats()
    inputs = [{"pixels": digit_pixels(i % 10)} for i in range(24)]
    results = await asyncio.gather(*(wb.run("digits_review", x) for x in inputs))
    assert [r.outputs["digit"] for r in results] == [i % 10 for i in range(24)]
    assert b.stats.requests == 24 and b.stats.max_batch_size > 1 and b.stats.calls < 24
    sizes = [e["payload"]["batch_size"] for r in results for e in wb.get_trace(r.run_id) if e["kind"] == "model_call"]
    assert max(sizes) > 1  # the recorded provenance shows the shared batches too


async def test_failing_run_names_the_node_and_leaves_other_runs_alone(wb):
    good = [{"parents": [["tom", "bob"], ["bob", "otto"]]} for _ in range(3)]
    bad = {"parents": [["tom", "bob"]], "start": -1}
    results = await asyncio.gather(*(wb.run("family", x) for x in [good[0], bad, good[1], good[2]]))
    assert [r.status for r in results] == ["succeeded", "failed", "succeeded", "succeeded"]
    failed = results[1]
    assert (
        failed.failed_node == "guard" and "node 'guard' (rules) failed" in failed.error and "count-down" in failed.error
    )
    assert set(failed.skipped) == {"who", "why", "out"} and failed.outputs is None
    stored = wb.get_run(failed.run_id)
    assert stored.status == "failed" and stored.failed_node == "guard"
    assert all(
        r.outputs == {"grandparents": 1, "ancestors_of_otto": 2, "first": "tom", "proved": True}
        for r in results
        if r.ok
    )


async def test_rules_goal_explain_and_output_nodes(wb):
    r = await wb.run("family", {"parents": [["tom", "bob"], ["bob", "otto"], ["ann", "tom"]]}, explain=True)
    assert r.ok, r.error
    assert r.outputs == {"grandparents": 2, "ancestors_of_otto": 3, "first": "tom", "proved": True}
    why = r.explanation["explain_nodes"]["why"]
    trees = {d["fact"]: d for d in why["derivations"]}
    assert set(trees) == {"(grandparent ann bob)", "(grandparent tom otto)"}
    t = trees["(grandparent tom otto)"]
    assert t["rule"] == "grandparent"
    assert [p["fact"] for p in t["premises"]] == ["(parent tom bob)", "(parent bob otto)"]
    assert all(p["source"] == "input" for p in t["premises"])
    proof = next(e for e in wb.get_trace(r.run_id) if e["kind"] == "proof")["payload"]
    assert proof["proved"] and {a["bindings"]["x"] for a in proof["answers"]} == {"tom", "bob", "ann"}
    firings = [
        e["payload"]["rule"] for e in wb.get_trace(r.run_id) if e["kind"] == "rule_firing" and e["node"] == "derive"
    ]
    assert firings.count("grandparent") == 2 and "ancestor-step" in firings


async def test_bad_input_names_node_and_json_path(wb):
    with pytest.raises(InputValidationError) as ei:
        await wb.run("digits_review", {"pixels": [0.5] * 63})
    assert ei.value.node == "image" and ei.value.field == "$.pixels"
    with pytest.raises(InputValidationError) as ei:
        await wb.run("digits_review", {"pixels": [0.5] * 63 + ["x"]})
    assert ei.value.field == "$.pixels[63]"


async def test_run_and_trace_are_written_in_one_transaction(wb):
    r = await wb.run("digits_review", {"pixels": digit_pixels(5)})
    with wb.store.session() as s:  # runs are written behind; the Workbench's store waits for them on read
        n_events = s.scalar(select(func.count()).select_from(TraceEventRow).where(TraceEventRow.run_id == r.run_id))
    assert n_events == len(wb.get_trace(r.run_id)) > 3
    # a failure while writing the trace leaves no partial run
    row = RunRow(pipeline_name="digits_review", pipeline_version=r.version, inputs={}, status="succeeded")
    from workbench.store import TraceEvent

    with pytest.raises(Exception):
        await wb.recorder.record(row, [TraceEvent("node", "x", {"ok": 1}), TraceEvent("node", "y", {"bad": object()})])
    with wb.store.session() as s:
        assert s.get(RunRow, row.id) is None
        assert s.scalar(select(func.count()).select_from(TraceEventRow).where(TraceEventRow.run_id == row.id)) == 0
    # and the recorder keeps working
    assert (await wb.run("digits_review", {"pixels": digit_pixels(5)})).run_id


async def test_result_cache_returns_the_recorded_result_without_calling_the_model(wb):
    p = Pipeline.from_file(EXAMPLE / "digits_review.yaml")
    p.cache = True
    b = _batcher(wb)
    first = await wb.run(p, {"pixels": digit_pixels(7)})
    calls = b.stats.calls
    second = await wb.run(p, {"pixels": digit_pixels(7)})
    assert second.cache_hit and second.cached_from == first.run_id and second.outputs == first.outputs
    assert b.stats.calls == calls
    assert wb.get_run(second.run_id).cache_hit is True
    third = await wb.run(p, {"pixels": digit_pixels(8)})
    assert not third.cache_hit and b.stats.calls == calls + 1
    assert 'workbench_pipeline_cache_hits_total{pipeline="digits_review"}' in wb.metrics_text().decode()
    off = await wb.run("digits_review", {"pixels": digit_pixels(7)})  # cache off by default
    assert not off.cache_hit


async def test_durable_runs_are_committed_before_they_return(dirs, tmp_path):
    from workbench import Workbench

    kb, pipes = dirs
    wb = Workbench(knowledge_base_dir=kb, pipeline_dir=pipes, model_catalog=tmp_path / "none.yaml", durable=True)
    try:
        r = await wb.run("family", {"parents": [["a", "b"]]})
        with wb.store.inner.session() as s:  # the bare Store, no waiting: the commit happened before run() returned
            assert s.get(RunRow, r.run_id) is not None
    finally:
        wb.close()


async def test_full_model_queue_passes_queue_full_error_through(dirs, tmp_path):
    wb = make_workbench(dirs, tmp_path, delay_ms=300.0, max_batch=64, queue=2)
    try:
        results = await asyncio.gather(
            *(wb.run("digits_review", {"pixels": digit_pixels(1)}) for _ in range(5)), return_exceptions=True
        )
        assert any(isinstance(r, QueueFullError) for r in results)
        assert sum(1 for r in results if not isinstance(r, BaseException) and r.ok) == 2
        assert len(wb.list_runs(pipeline="digits_review")) == 2  # refused runs are not recorded
    finally:
        wb.close()


async def test_explanation_says_why_a_gate_did_not_choose_a_branch(wb):
    r = await wb.run("digits_review", {"pixels": [0.0] * 64}, explain=True)
    gate = r.explanation["gates"][0]
    wn = gate["why_not"]["classify"]
    assert wn["goal"] == "(route (branch classify))" and not wn["holds"]
    has_ink = next(x for x in wn["rules"] if x["rule"] == "has-ink")
    assert has_ink["status"] == "premise-failed" and has_ink["index"] == 0 and "image" in has_ink["premise"]
    quiet = await wb.run("digits_review", {"pixels": [0.0] * 64})  # not asked: not computed
    assert "why_not" not in next(e for e in wb.get_trace(quiet.run_id) if e["kind"] == "gate_decision")["payload"]
