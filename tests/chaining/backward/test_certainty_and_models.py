"""Certainty factors (EMYCIN) and the neural predicate: N concurrent goals, one batched model call."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import rules
from chaining.backward import ModelProvider, PersonProvider, Session, combine, probability_to_certainty
from rules.facts import Fact, String

KB_DIR = Path(__file__).resolve().parents[3] / "knowledge_bases"


def load(name: str) -> rules.KnowledgeBase:
    return rules.load_knowledge_base(KB_DIR / name)


def test_emycin_combination() -> None:
    assert combine(0.6, 0.4) == pytest.approx(0.76)
    assert combine(0.6, -0.4) == pytest.approx(0.3333, abs=1e-4)
    assert combine(-0.6, -0.4) == pytest.approx(-0.76)
    assert combine(0.3, 0.0) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        combine(1.2, 0.1)


def test_certainty_factors_through_rules() -> None:
    s = Session(load("bc_certainty.clp"))
    flu = s.prove_sync("(flu)").answers[0]
    assert flu.certainty == pytest.approx(0.76)
    assert flu.proof.kind == "combined"
    assert {p.rule for p in flu.proof.premises} == {"flu-from-fever", "flu-from-cough"}
    cold = s.prove_sync("(cold)").answers[0]
    assert cold.certainty == pytest.approx(0.3333, abs=1e-4)
    advise = s.prove_sync("(advise ?a)").answers[0]
    assert advise.certainty == pytest.approx(0.9 * 0.76)


def test_knowledge_base_without_certainty_factors_reports_none() -> None:
    r = Session(load("family.clp")).prove_sync("(grandparent ?g otto)")
    assert r.answers[0].certainty is None and r.answers[0].proof.certainty is None


def test_person_answer_certainty_and_threshold() -> None:
    kb = rules.knowledge_base_from_text(
        "cf",
        """
;@certainty-factors
;@askable slot=value
(deftemplate symptom (slot name) (slot value (allowed-symbols yes no)))
;@cf 0.8
(defrule r (symptom (name rash) (value yes)) => (assert (measles)))
""",
    )
    r = Session(kb, provider=PersonProvider(lambda q: {"value": "yes", "certainty": 0.5})).prove_sync("(measles)")
    assert r.answers[0].certainty == pytest.approx(0.4)
    weak = Session(kb, provider=PersonProvider(lambda q: {"value": "yes", "certainty": 0.1})).prove_sync("(measles)")
    assert weak.answers == []  # below the EMYCIN threshold of 0.2


def test_probability_maps_to_certainty() -> None:
    assert probability_to_certainty(0.5) == 0.0
    assert probability_to_certainty(0.9) == pytest.approx(0.8)
    assert probability_to_certainty(0.0) == -1.0


def test_concurrent_goals_make_one_batched_model_call() -> None:
    kb = load("bc_neural.clp")
    n = 12
    calls: list[list[Fact]] = []

    async def predict_batch(facts: list[Fact]) -> list:
        calls.append(list(facts))
        await asyncio.sleep(0.001)
        return [("positive", 0.9) if "good" in f.slots["text"] else ("negative", 0.7) for f in facts]

    reviews = [
        {"template": "review", "values": [f"r{i}", f"{'good' if i % 3 else 'awful'} film number {i}"]} for i in range(n)
    ]

    async def main():
        s = Session(kb, facts=reviews, provider=ModelProvider(predict_batch))
        results = await asyncio.gather(*(s.prove(f"(recommend r{i})") for i in range(n)))
        again = await asyncio.gather(*(s.prove(f"(recommend r{i})") for i in range(n)))
        return results, again

    results, again = asyncio.run(main())
    assert len(calls) == 1, [len(c) for c in calls]
    assert len(calls[0]) == n
    assert all(isinstance(f.slots["text"], String) and set(f.slots) == {"text"} for f in calls[0])
    assert [bool(r.answers) for r in results] == [bool(i % 3) for i in range(n)]
    assert [bool(r.answers) for r in again] == [bool(i % 3) for i in range(n)]  # answered from the session cache
    proof = results[1].answers[0].proof
    asked = proof.premises[1]
    assert asked.kind == "asked" and asked.source == "model"


def test_sequential_goals_ask_one_at_a_time_and_cache() -> None:
    kb = load("bc_neural.clp")
    sizes = []

    async def predict_batch(facts):
        sizes.append(len(facts))
        return ["positive" for _ in facts]

    s = Session(
        kb,
        facts=[{"template": "review", "values": ["a", "nice"]}, {"template": "review", "values": ["b", "ok"]}],
        provider=ModelProvider(predict_batch),
    )
    assert s.prove_sync("(recommend a)").answers
    assert s.prove_sync("(recommend a)").answers
    assert s.prove_sync("(recommend b)").answers
    assert sizes == [1, 1]


def test_first_answer_still_combines_every_derivation() -> None:
    """Asking for one answer must not stop before the second rule's evidence is combined."""
    s = Session(load("bc_certainty.clp"))
    cold = s.prove_sync("(cold)", limit=1).answers[0]
    assert cold.certainty == pytest.approx(0.3333, abs=1e-4)
    assert cold.proof.kind == "combined"
    assert sorted(p.rule for p in cold.proof.premises) == ["cold-from-cough", "cold-unlikely-when-vaccinated"]
    assert [p.certainty for p in cold.proof.premises] == [pytest.approx(0.6), pytest.approx(-0.4)]


def test_one_query_over_many_items_makes_one_batched_model_call() -> None:
    """The questions one proof raises for a model are asked together (they were 6 calls of batch 1)."""
    kb = load("bc_neural.clp")
    sizes: list[int] = []

    async def predict_batch(facts: list[Fact]) -> list:
        sizes.append(len(facts))
        return ["positive" if "good" in f.slots["text"] else "negative" for f in facts]

    reviews = [{"template": "review", "values": [f"r{i}", f"{'good' if i % 2 else 'bad'} film {i}"]} for i in range(6)]
    r = Session(kb, facts=reviews, provider=ModelProvider(predict_batch)).prove_sync("(recommend ?r)")
    assert sizes == [6]
    assert sorted(str(a.bindings["r"]) for a in r.answers) == ["r1", "r3", "r5"]
    assert all(a.proof.premises[1].kind == "asked" and a.proof.premises[1].source == "model" for a in r.answers)
