"""The benchmark programs compute what their published descriptions say (not timed here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import rules
from chaining.forward import ExpertaEngine, ForwardEngine
from cli.benchmarks._rules_experta import MANNERS_FACT_TYPES, WALTZ_FACT_TYPES, Manners, Waltz
from cli.benchmarks.rules import gating_facts, manners_facts, waltz_facts

BENCH = Path(__file__).resolve().parents[3] / "knowledge_bases" / "bench"


@pytest.mark.parametrize("guests", [16, 32])
def test_manners_seats_everyone_alternating_with_shared_hobbies(guests):
    facts = manners_facts(guests)
    result = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([BENCH / "manners.clp"])).evaluate(facts)
    assert "Yes, we are done!!" in result.output
    seats = {int(s): name for name, s in re.findall(r"^(g\d+) (\d+)$", result.output, re.M)}
    assert sorted(seats) == list(range(1, guests + 1))
    assert len(set(seats.values())) == guests
    sex = {f["slots"]["name"]: f["slots"]["sex"] for f in facts if f["template"] == "guest"}
    hobbies: dict[str, set] = {}
    for f in facts:
        if f["template"] == "guest":
            hobbies.setdefault(f["slots"]["name"], set()).add(f["slots"]["hobby"])
    for s in range(1, guests):
        a, b = seats[s], seats[s + 1]
        assert sex[a] != sex[b] and hobbies[a] & hobbies[b], (s, a, b)


def test_manners_experta_agrees_on_small_instance():
    facts = manners_facts(8)
    clp = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([BENCH / "manners.clp"])).evaluate(facts)
    exp = ExpertaEngine(Manners, fact_types=MANNERS_FACT_TYPES).evaluate(facts)
    assert "Yes, we are done!!" in exp.output and len(exp.firings) == len(clp.firings)


def test_waltz_labels_every_cube_uniquely_and_correctly():
    facts = waltz_facts(3)
    clp = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([BENCH / "waltz.clp"])).evaluate(facts)
    exp = ExpertaEngine(Waltz, fact_types=WALTZ_FACT_TYPES).evaluate(facts)
    lines = sorted(clp.output.splitlines())
    assert lines == sorted(exp.output.splitlines())
    assert len(lines) == 21  # 7 junctions per cube, one labelling each
    expected = {"fork": "+ + +", "arrow": "out + in", "L": "out in"}  # convex cube, outline occluding
    for line in lines:
        _, kind, labels = line.split(" ", 2)
        assert labels == expected[kind]


def test_gating_inputs_exercise_every_rule():
    engine = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([BENCH / "gating.clp"]))
    fired = set()
    for i in range(300):
        fired |= {f.rule for f in engine.evaluate(gating_facts(i)).firings}
    assert len(fired) == 10
