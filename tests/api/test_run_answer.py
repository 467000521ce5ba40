"""`api.run_answer.run_answer_json`: the predict answer with the input's and explanation's JSON taken
from the store's write of the same objects is byte for byte `RunOut`'s own JSON, for values of
every kind (non-finite floats, every float exponent, big integers, escapes, non-ASCII text)."""

from __future__ import annotations

import math
import random
import struct

import pytest
from pydantic import ValidationError

from api.run_answer import run_answer_json
from api.schemas.responses import RunOut
from workbench.store import database
from workbench.store.database import json_text, recent_json_text

_TEXTS = ["", "a", 'quote " and \\ back', "zé ü 漢字 🙂", "\x00\x1f\x7f", "line\nbreak\ttab", "</script>", "\u2028"]


def _value(rng: random.Random, depth: int = 0):
    k = rng.randrange(9 if depth < 4 else 6)
    if k == 0:
        return struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]  # NaN payloads, infinities, subnormals
    if k == 1:
        return rng.choice([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e16, 1e-7, 5e-324, 0.1, 2.0**53 + 2])
    if k == 2:
        return rng.choice([0, -1, 2**63, -(2**70), rng.randrange(-(10**6), 10**6)])
    if k == 3:
        return rng.choice(_TEXTS) + str(rng.random())
    if k == 4:
        return rng.choice([True, False, None])
    if k == 5:
        return rng.uniform(-1e6, 1e6)
    if k in (6, 7):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(0, 12))]
    return {rng.choice(_TEXTS) + str(i): _value(rng, depth + 1) for i in range(rng.randrange(0, 8))}


def _result(rng: random.Random) -> dict:
    inputs = {"id": "x", "images": [[rng.uniform(0, 16) for _ in range(64)] for _ in range(8)], "other": _value(rng)}
    explanation = {"decisions": [_value(rng) for _ in range(20)], "scores": [rng.random() for _ in range(64)]}
    explanation["explain_nodes"] = {"why": _value(rng)}
    return {
        "run_id": "r", "pipeline": "p", "version": "v", "status": "succeeded", "inputs": inputs,
        "outputs": {"inputs": "x", "explanation": {"a": math.nan}, "score": _value(rng)}, "error": None,
        "failed_node": None, "explanation": explanation, "timings": {"total": 0.001}, "skipped": [],
        "cache_hit": False, "cached_from": None, "knowledge_base_versions": {}, "model_versions": {},
        "started_at": "2026-12-02T00:00:00", "duration_s": 0.001, "replay_of": None, "served_by": None,
    }  # fmt: skip


def test_answers_are_runouts_own_json_byte_for_byte():
    rng = random.Random(1402)
    shared = 0
    for _ in range(300):
        r = _result(rng)
        json_text(r["inputs"]), json_text(r["explanation"])  # the store's write of the run
        shared += recent_json_text(r["inputs"]) is not None and recent_json_text(r["explanation"]) is not None
        assert run_answer_json(r) == RunOut.model_validate(r).model_dump_json()
    assert shared == 300  # the texts were reused, not serialised again


def test_without_a_write_at_hand_the_answer_is_serialised_here():
    r = _result(random.Random(3))
    database._RECENT.clear()
    assert recent_json_text(r["inputs"]) is None
    assert run_answer_json(r) == RunOut.model_validate(r).model_dump_json()
    json_text(r["explanation"])  # only one of the two at hand
    assert run_answer_json(r) == RunOut.model_validate(r).model_dump_json()


def test_a_changed_object_is_not_taken_for_its_text_and_errors_stay_runouts():
    r = _result(random.Random(5))
    json_text(r["inputs"])
    copy = dict(r, inputs=dict(r["inputs"]))  # equal, not the same object: serialised here
    assert recent_json_text(copy["inputs"]) is None
    bad = dict(r, explanation={1: "not a JSON object key"})
    database._RECENT[id(bad["explanation"])] = (bad["explanation"], '{"1":"not a JSON object key"}')
    with pytest.raises(ValidationError) as got:
        run_answer_json(bad)
    with pytest.raises(ValidationError) as want:
        RunOut.model_validate(bad)
    assert got.value.errors() == want.value.errors()


def test_a_runs_two_texts_outlive_the_bound_when_other_writes_interleave():
    # CI stop 30: another thread's write made the count odd, the bound fell between a run's input and its
    # explanation, and clearing every entry dropped the input's text (298 of 300 reused). Oldest first out
    # keeps both.
    database._RECENT.clear()
    others = [{"k": "x" * database._RECENT_MIN_CHARS, "i": i} for i in range(database._RECENT_MAX - 1)]
    for other in others:
        json_text(other)
    r = _result(random.Random(7))
    json_text(r["inputs"]), json_text(r["explanation"])
    assert recent_json_text(r["inputs"]) is not None and recent_json_text(r["explanation"]) is not None
    assert len(database._RECENT) == database._RECENT_MAX
    assert recent_json_text(others[0]) is None and recent_json_text(others[1]) is not None  # the oldest went
