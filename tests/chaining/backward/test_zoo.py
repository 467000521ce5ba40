"""15-rule zoo identification driven by scripted answers: every animal reachable, a HOW proof for each."""

from __future__ import annotations

from pathlib import Path as _Path

import pytest

import rules as _rules
from chaining.backward import PersonProvider, ScriptedProvider, Session

KB_DIR = _Path(__file__).resolve().parents[3] / "knowledge_bases"


def load(name: str) -> _rules.KnowledgeBase:
    return _rules.load_knowledge_base(KB_DIR / name)


ANIMALS = {
    "cheetah": ({"hair", "eats-meat", "tawny", "dark-spots"}, ["cheetah", "carnivore-by-meat", "mammal-by-hair"]),
    "tiger": (
        {"gives-milk", "pointed-teeth", "claws", "forward-eyes", "tawny", "black-stripes"},
        ["tiger", "carnivore-by-anatomy", "mammal-by-milk"],
    ),
    "giraffe": (
        {"hair", "hoofs", "long-neck", "long-legs", "dark-spots"},
        ["giraffe", "ungulate-by-hoofs", "mammal-by-hair"],
    ),
    "zebra": ({"gives-milk", "chews-cud", "black-stripes"}, ["zebra", "ungulate-by-cud", "mammal-by-milk"]),
    "ostrich": ({"feathers", "long-neck", "black-and-white"}, ["ostrich", "bird-by-feathers"]),
    "penguin": ({"feathers", "swims", "black-and-white"}, ["penguin", "bird-by-feathers"]),
    "albatross": ({"flies", "lays-eggs", "flies-well"}, ["albatross", "bird-by-flight-and-eggs"]),
}
FEATURES = [
    "hair",
    "gives-milk",
    "feathers",
    "flies",
    "lays-eggs",
    "eats-meat",
    "pointed-teeth",
    "claws",
    "forward-eyes",
    "hoofs",
    "chews-cud",
    "tawny",
    "dark-spots",
    "black-stripes",
    "long-neck",
    "long-legs",
    "black-and-white",
    "swims",
    "flies-well",
]


def script(present: set[str]) -> dict[str, str]:
    return {f"(feature (name {f}))": "yes" if f in present else "no" for f in FEATURES}


def test_fifteen_rules() -> None:
    assert len(load("zoo.clp").rules) == 15


@pytest.mark.parametrize("animal", list(ANIMALS))
def test_every_animal_is_reachable_with_a_how_proof(animal: str) -> None:
    present, chain = ANIMALS[animal]
    provider = ScriptedProvider(script(present))
    r = Session(load("zoo.clp"), provider=provider).prove_sync("(animal ?a)", limit=1)
    assert [str(a.bindings["a"]) for a in r.answers] == [animal]
    proof = r.answers[0].proof
    assert proof.kind == "rule" and proof.rule == animal
    assert proof.rules_used() == chain  # every rule of the chain, in depth-first order, and no other
    asked = [leaf for leaf in proof.leaves() if leaf.kind == "asked"]
    assert asked and all(leaf.source == "script" for leaf in asked)
    for leaf in asked:  # every answer in the proof is the scripted one
        assert (str(leaf.fact.slots["value"]) == "yes") == (leaf.fact.slots["name"] in present)
    # questions were asked once each (cached) and only about features the rules use
    keys = [q.fact_text for q in provider.asked]
    assert len(keys) == len(set(keys))
    r_all = Session(load("zoo.clp"), provider=ScriptedProvider(script(present))).prove_sync("(animal ?a)")
    assert [str(a.bindings["a"]) for a in r_all.answers] == [animal]


def test_why_chain_at_a_question() -> None:
    seen = []

    def person(q):
        seen.append(q)
        return "yes" if q.fact.slots["name"] in ANIMALS["cheetah"][0] else "no"

    r = Session(load("zoo.clp"), provider=PersonProvider(person)).prove_sync("(animal ?a)", limit=1)
    assert str(r.answers[0].bindings["a"]) == "cheetah"
    q = next(q for q in seen if q.fact.slots["name"] == "eats-meat")
    assert q.text == "Does the animal have this feature: eats-meat?"
    assert q.allowed == ["yes", "no"]
    assert q.why[0] == "(animal ?a) by rule cheetah"
    assert "by rule carnivore-by-meat" in q.why[-2] and q.why[-1] == "(feature (name eats-meat))"
    assert any("by rule cheetah" in step for step in q.why)


def test_bad_answer_is_refused() -> None:
    from chaining.backward import AskError

    with pytest.raises(AskError, match="not one of: yes, no"):
        Session(load("zoo.clp"), provider=PersonProvider(lambda q: "maybe")).prove_sync("(animal ?a)", limit=1)


def test_consultation_asks_only_what_it_needs() -> None:
    """A ground subgoal such as (class mammal) stops at its first proof, so gives-milk is never asked."""
    provider = ScriptedProvider(script(ANIMALS["cheetah"][0]))
    r = Session(load("zoo.clp"), provider=provider).prove_sync("(animal ?a)", limit=1)
    assert str(r.answers[0].bindings["a"]) == "cheetah"
    assert [q.fact.slots["name"] for q in provider.asked] == ["hair", "eats-meat", "tawny", "dark-spots"]


def test_without_a_provider_unasked_facts_are_unknown() -> None:
    """Over HTTP there is no one to ask: given observations are used, the rest reported as not asked."""
    from rules.facts import Fact

    facts = [Fact("feature", {"name": n, "value": "yes"}) for n in ["feathers", "flies-well"]]
    r = Session(load("zoo.clp"), facts=facts).prove_sync("(animal ?a)")
    assert [str(a.bindings["a"]) for a in r.answers] == ["albatross"]
    assert any(w.startswith("not asked, no provider: Does the animal have this feature: hair?") for w in r.warnings)
