"""Each demo pipeline through the Workbench on real held-out inputs, checked against their labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.demo.digits_data import damaged_sequences, heldout_sequences

ROOT = Path(__file__).resolve().parents[2]


def test_digits_pipeline_on_real_heldout_numbers(wb):
    seqs = heldout_sequences(limit=3)  # heldout-00 is read right; 01 has one misread digit; 02 two
    inputs = [s.to_input() for s in seqs] + [damaged_sequences(seqs, count=1)[0].to_input()]
    results = wb.run_many_sync("demo_digits", inputs)
    out = [r.outputs for r in results]
    assert all(r.ok and r.run_id for r in results)
    assert out[0]["action"] == "accept" and out[0]["number"] == seqs[0].number
    assert out[1]["action"] == "corrected" and out[1]["number"] == seqs[1].number and out[1]["read"] != seqs[1].number
    assert out[2]["action"] == "review"  # two digits misread: no single repair is clearly best
    assert out[3]["action"] == "rejected" and "read" in results[3].skipped  # the gate kept the model from running
    stored = wb.get_run(results[1].run_id)
    assert stored.outputs == out[1] and stored.model_versions.get("demo-digits")
    kinds = {e["kind"] for e in wb.get_trace(results[1].run_id)}
    assert {"rule_firing", "model_call", "gate_decision"} <= kinds


LABELLED = [
    ("my card got stolen at the train station", "fraud_report", "escalate"),
    ("I will take this to the financial ombudsman", "complaint", "escalate"),
    ("how much does my wife have in her account", "third_party_request", "refuse"),
    ("I've just moved, please update my address", "change_address", "answer"),
    ("what's the weather like tomorrow", None, "clarify"),
    ("I lost card 4716-2012-3418-2256, cancel it", "card_lost", "blocked"),
]


def test_labelled_examples_are_in_the_heldout_file():
    rows = {
        json.loads(line)["text"]: json.loads(line)
        for line in (ROOT / "data/intents/heldout.jsonl").read_text().splitlines()
    }
    train = {json.loads(line)["text"] for line in (ROOT / "data/intents/train.jsonl").read_text().splitlines()}
    for text, intent, action in LABELLED:
        assert rows[text]["intent"] == intent and rows[text]["action"] == action
    assert not train & set(rows)


@pytest.mark.parametrize("text,intent,action", LABELLED)
def test_intents_pipeline_on_labelled_requests(wb, text, intent, action):
    r = wb.run_sync("demo_intents", {"text": text}, explain=True)
    assert r.ok, r.error
    assert r.outputs["action"] == action
    if action == "blocked":
        assert {"embed", "router"} <= set(r.skipped)  # the card number never reached a model
    elif intent is not None:
        assert r.outputs["intent"] == intent
        assert r.outputs["evidence"]  # the nearest labelled example is cited


def test_generation_through_rails(wb):
    from workbench.demo.generate_demo import generation_unavailable
    from workbench.demo.prompts import PROMPTS

    reason = generation_unavailable()
    if reason:
        pytest.skip(reason)
    prompts = [p["prompt"] for p in PROMPTS[:4]] + [p["prompt"] for p in PROMPTS if p["expect"] == "blocked"]
    res = wb.run_many_sync("demo_generate", [{"prompt": p, "seed": i} for i, p in enumerate(prompts)])
    for p, r in zip(prompts, res):
        assert r.ok, r.error
        out = r.outputs
        expect = next(x["expect"] for x in PROMPTS if x["prompt"] == p)
        if expect == "blocked":
            assert out["outcome"] == "blocked" and "generate" in r.skipped
        else:
            assert out["outcome"] in ("completed", "stopped") and out["usage"]["completion_tokens"] > 0
            assert (
                len(out["text"].replace(" ...", "").replace(" [stopped: content policy]", "").split()) <= 60
            )  # the length rail
            for name in ("Romeo", "Juliet", "villain"):
                assert name.lower() not in out["text"].lower()  # redaction rail
        assert wb.get_run(r.run_id).outputs["outcome"] == out["outcome"]


def test_replay_with_a_stricter_checksum_policy_sends_the_correction_to_review(wb):
    seq = heldout_sequences(limit=2)[1]  # corrected with a repair 572x more probable than the runner-up
    first = wb.run_sync("demo_digits", seq.to_input())
    assert first.outputs["action"] == "corrected"
    text = (ROOT / "knowledge_bases" / "demo_digits_checksum.clp").read_text()
    stricter = text.replace(
        "(slot ambiguity-ratio (type FLOAT) (default 10.0))", "(slot ambiguity-ratio (type FLOAT) (default 1000.0))"
    )
    assert stricter != text
    replay = wb.replay_sync(first.run_id, knowledge_bases={"demo_digits_checksum": stricter})
    assert replay.replay.outputs["action"] == "review" and replay.replay.replay_of == first.run_id
    assert replay.changes["outputs"]["action"] == {"before": "corrected", "after": "review"}
