"""The digits knowledge bases on real CLIPS (through the forward engine), against Python's Luhn."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from chaining.forward import ForwardEngine
from workbench.demo.digits_data import damaged_sequences, heldout_sequences, luhn_check_digit, luhn_valid

KB = Path(__file__).resolve().parents[2] / "knowledge_bases"


@pytest.fixture(scope="module")
def checksum():
    with ForwardEngine.from_files([KB / "demo_digits_checksum.clp"]) as e:
        yield e


@pytest.fixture(scope="module")
def gate():
    with ForwardEngine.from_files([KB / "demo_digits_gate.clp"]) as e:
        yield e


def _facts(digits, scores=None, probs=None):
    n = len(digits)
    facts = [{"template": "sequence", "slots": {"id": "t", "length": n}}]
    for i, d in enumerate(digits):
        p = probs[i] if probs else [0.99 if k == d else 0.01 / 9 for k in range(10)]
        facts.append(
            {"template": "digit", "slots": {"pos": i, "label": d, "score": scores[i] if scores else max(p), "probs": p}}
        )
    return facts


def _decision(result):
    [d] = result.facts_of("decision")
    return {k: str(v) for k, v in d.slots.items()}


def test_clips_luhn_agrees_with_python_on_random_numbers(checksum):
    rng = random.Random(7)
    for _ in range(40):
        n = rng.randint(2, 16)
        digits = [rng.randint(0, 9) for _ in range(n)]
        r = checksum.evaluate(_facts(digits))
        [c] = r.facts_of("checksum")
        assert (str(c.slots["valid"]) == "yes") == luhn_valid(digits), digits


def test_valid_number_is_accepted():
    payload = [7, 9, 9, 2, 7, 3, 9, 8, 7, 1]
    digits = payload + [luhn_check_digit(payload)]
    with ForwardEngine.from_files([KB / "demo_digits_checksum.clp"]) as e:
        d = _decision(e.evaluate(_facts(digits)))
    assert d["action"] == "accept" and d["number"] == "".join(map(str, digits))


def test_single_misread_digit_is_corrected_to_the_model_s_most_probable_repair(checksum):
    truth = [3, 4, 8, 4, 1, 8, 2, 5]
    assert luhn_valid(truth)
    read = list(truth)
    read[2] = 6  # misread 8 as 6; the model gives the true digit some probability, the rest none
    probs = [[0.999 if k == d else 0.001 / 9 for k in range(10)] for d in read]
    probs[2] = [0.0] * 10
    probs[2][6], probs[2][8], probs[2][0] = 0.7, 0.25, 0.05
    d = _decision(checksum.evaluate(_facts(read, probs=probs)))
    assert d["action"] == "corrected"
    assert d["number"] == "".join(map(str, truth)) and d["read"] == "".join(map(str, read))


def test_ambiguous_repair_goes_to_review(checksum):
    truth = [3, 4, 8, 4, 1, 8, 2, 5]
    read = list(truth)
    read[2] = 6
    probs = [[0.999 if k == d else 0.001 / 9 for k in range(10)] for d in read]
    # two positions each offer a repair the model finds equally plausible
    r = checksum.evaluate(_facts(read, probs=probs))
    assert _decision(r)["action"] == "review"
    assert not r.facts_of("correction")


def test_low_confidence_digit_in_a_valid_number_goes_to_review(checksum):
    digits = [3, 4, 8, 4, 1, 8, 2, 5]
    scores = [0.99] * 8
    scores[5] = 0.41
    d = _decision(checksum.evaluate(_facts(digits, scores=scores)))
    assert d["action"] == "review" and "position 5" in d["reason"]


def test_gate_rejects_a_blank_picture_and_classifies_real_ones(gate):
    seq = heldout_sequences(limit=1)[0]
    blank = damaged_sequences([seq], count=1)[0]
    for s, branch in ((seq, "classify"), (blank, "reject")):
        images = [{"template": "image", "slots": {"pos": i, "ink": sum(im)}} for i, im in enumerate(s.images)]
        r = gate.evaluate([{"template": "sequence", "slots": {"id": s.id, "length": len(s.images)}}, *images])
        [route] = r.facts_of("route")
        assert str(route.slots["branch"]) == branch
