"""The same rule set as an experta engine and as a .clp file reaches the same conclusions."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from fwd_experta_programs import AnimalClass, Animals, Bank, Family, LongChain, identified, observation

import rules
from chaining.forward import (
    EngineConfig,
    EvaluationTimeout,
    ExpertaEngine,
    FiringLimitError,
    ForwardEngine,
    RuleExecutionError,
)
from cli.benchmarks._rules_experta import GATING_FACT_TYPES, Gating

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = ROOT / "tests" / "chaining" / "programs"
KB = ROOT / "knowledge_bases"


def _clips(path: Path) -> ForwardEngine:
    return ForwardEngine.from_knowledge_base(rules.load_knowledge_base([path]))


def _conclusions(result, templates) -> set:
    return {
        (
            f.template,
            tuple(sorted((k, str(v) if not isinstance(v, tuple) else tuple(map(str, v))) for k, v in f.slots.items())),
        )
        for f in result.facts
        if f.template in templates
    }


def test_family():
    clp = _clips(PROGRAMS / "01_family.clp").evaluate()
    exp = ExpertaEngine(Family).evaluate()
    conclusions = {"grandparent", "sibling"}
    assert _conclusions(clp, conclusions) == _conclusions(exp, conclusions)
    assert len(_conclusions(clp, {"grandparent"})) == 3
    assert sorted(line for line in clp.output.splitlines() if "grandparent" in line) == sorted(
        line for line in exp.output.splitlines() if "grandparent" in line
    )


ANIMALS = {
    "cheetah": [("hair", "yes"), ("eats-meat", "yes"), ("colour", "tawny"), ("markings", "dark-spots")],
    "tiger": [
        ("gives-milk", "yes"),
        ("pointed-teeth", "yes"),
        ("claws", "yes"),
        ("forward-eyes", "yes"),
        ("colour", "tawny"),
        ("markings", "black-stripes"),
    ],
    "giraffe": [("hair", "yes"), ("hoofs", "yes"), ("long-neck", "yes"), ("markings", "dark-spots")],
    "zebra": [("hair", "yes"), ("chews-cud", "yes"), ("markings", "black-stripes")],
    "ostrich": [("feathers", "yes"), ("flies", "no"), ("long-neck", "yes"), ("colour", "black-and-white")],
    "penguin": [("feathers", "yes"), ("flies", "no"), ("swims", "yes"), ("colour", "black-and-white")],
    "albatross": [("flies", "yes"), ("lays-eggs", "yes"), ("wingspan-m", 3.1)],
}


def _observations(pairs):
    return [{"template": "observation", "slots": {"attribute": a, "value": v}} for a, v in pairs]


@pytest.mark.parametrize("animal", sorted(ANIMALS))
def test_animals(animal):
    facts = _observations(ANIMALS[animal])
    clp = _clips(KB / "animals.clp").evaluate(facts)
    exp = ExpertaEngine(
        Animals, fact_types={"observation": observation, "class": AnimalClass, "identified": identified}
    ).evaluate(facts)
    assert _conclusions(clp, {"identified", "class"}) == _conclusions(exp, {"identified", "class"})
    assert [str(f.slots["animal"]) for f in clp.facts_of("identified")] == [animal]
    assert clp.output == exp.output == f"identified: {animal}\n"


def test_bank_transfers():
    clp = _clips(PROGRAMS / "13_fact_address.clp").evaluate()
    exp = ExpertaEngine(Bank).evaluate()
    assert _conclusions(clp, {"account", "transfer"}) == _conclusions(exp, {"account", "transfer"})
    assert {str(f.slots["owner"]): f.slots["balance"] for f in clp.facts_of("account")} == {"ann": 70, "bob": 50}
    assert [
        line for line in clp.output.splitlines() if line.startswith(("moved", "refused"))
    ] == exp.output.splitlines()


def test_long_chain():
    clp = _clips(PROGRAMS / "23_long_chain.clp").evaluate()
    exp = ExpertaEngine(LongChain).evaluate()
    assert _conclusions(clp, {"counter"}) == _conclusions(exp, {"counter"}) == {("counter", (("implied", ("600",)),))}
    assert clp.output == exp.output
    assert len(clp.firings) == len(exp.firings) == 601


def gating_facts(rng: random.Random) -> list[dict]:
    return [
        {
            "template": "request",
            "slots": {
                "id": rng.randrange(10**6),
                "channel": rng.choice(["api", "email", "web"]),
                "length": rng.randrange(50, 800),
            },
        },
        {"template": "prediction", "slots": {"label": rng.choice(["spam", "ham"]), "score": round(rng.random(), 3)}},
        {"template": "user", "slots": {"tier": rng.choice(["gold", "basic"]), "strikes": rng.randrange(5)}},
        {"template": "limits", "slots": {"min-score": 0.3, "max-length": 450}},
        {"template": "clock", "slots": {"hour": rng.randrange(24)}},
    ]


def test_gating_same_decisions():
    rng = random.Random(7)
    clp = _clips(KB / "bench" / "gating.clp")
    exp = ExpertaEngine(Gating, fact_types=GATING_FACT_TYPES)
    seen = set()
    for _ in range(150):
        facts = gating_facts(rng)
        a, b = clp.evaluate(facts), exp.evaluate(facts)
        ca, cb = _conclusions(a, {"decision", "gate"}), _conclusions(b, {"decision", "gate"})
        assert ca == cb, facts
        seen |= {c for c in ca}
    assert len(seen) >= 8  # the inputs exercise most rules


def test_experta_limits_and_errors():
    exp = ExpertaEngine(LongChain, config=EngineConfig(max_firings=50))
    with pytest.raises(FiringLimitError) as info:
        exp.evaluate()
    assert info.value.last_rules[-1] == "step" and len(info.value.partial.firings) == 50
    with pytest.raises(EvaluationTimeout):
        exp.evaluate(timeout=1e-6, max_firings=10**9)
    assert exp.evaluate(max_firings=10**9).firings[-1].rule == "done"  # still usable
    with pytest.raises(ValueError, match="only the 'depth'"):
        exp.evaluate(strategy="breadth")


def test_experta_rule_error():
    from experta import KnowledgeEngine, Rule
    from fwd_experta_programs import counter

    class Broken(KnowledgeEngine):
        @Rule(counter(0))
        def boom(self):
            print("about to fail")
            raise ZeroDivisionError("x")

    with pytest.raises(RuleExecutionError) as info:
        ExpertaEngine(Broken, fact_types={"counter": counter}).evaluate([{"template": "counter", "values": [0]}])
    assert info.value.partial.output == "about to fail\n"
