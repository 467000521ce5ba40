"""The C trace recorder and the Python one give identical traces (firings, fact events, facts)."""

from __future__ import annotations

import pytest

import rules
from chaining.forward import EngineConfig, ForwardEngine, native_trace
from rules.facts import Fact

pytestmark = pytest.mark.skipif(not native_trace.AVAILABLE, reason=f"C trace recorder: {native_trace.UNAVAILABLE}")


@pytest.mark.parametrize("program", ["manners-16", "waltz-4", "gating"])
def test_both_recorders_record_the_same_trace(program):
    """The C and the Python recorder give identical firings and fact events on the benchmark programs."""
    from cli.benchmarks.rules import BENCH_KB, gating_facts, manners_facts, waltz_facts
    from rules.facts import facts_from_json

    name = program.split("-")[0]
    facts = {
        "manners": lambda: manners_facts(16),
        "waltz": lambda: waltz_facts(4),
        "gating": lambda: [f for i in range(3) for f in gating_facts(i)],
    }[name]()
    kb = rules.load_knowledge_base([BENCH_KB / f"{name}.clp"])
    results = []
    for native in (True, False):
        engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1, native=native))
        assert engine._idle[0].recorder.kind == ("native" if native else "python")
        data = facts_from_json(facts)
        first = engine.evaluate(data)
        again = engine.evaluate(data)  # a second evaluation records only its own run
        assert (again.firings, again.events, again.facts) == (first.firings, first.events, first.facts)
        results.append(first)
        engine.close()
    native_result, python_result = results
    assert len(native_result.firings) >= 5 and native_result.events
    assert native_result.firings == python_result.firings
    assert native_result.events == python_result.events
    assert native_result.facts == python_result.facts


def test_both_recorders_agree_on_modules_negation_and_odd_rule_names():
    """Rules of other modules, `not`/`exists`/`test` items (`*` in the basis), a rule named with
    a colon, salience below zero: the C recorder's reading of CLIPS's activation text."""
    kb = """
    (defmodule MAIN (export deftemplate ?ALL))
    (deftemplate item (slot n))
    (defrule MAIN::start => (assert (item (n 1))) (focus WORK))
    (defmodule WORK (import MAIN deftemplate ?ALL))
    (defrule WORK::a:b (declare (salience -5)) ?f <- (item (n ?n&:(< ?n 4))) (not (item (n 99)))
      => (modify ?f (n (+ ?n 1))))
    (defrule WORK::seen (item (n ?n)) (exists (item (n 4))) (test (> ?n 3)) => (assert (item (n 99))))
    """
    results = []
    for native in (True, False):
        engine = ForwardEngine.from_knowledge_base(
            rules.knowledge_base_from_text("mods", kb), config=EngineConfig(workers=1, native=native)
        )
        results.append(engine.evaluate([]))
        engine.close()
    c, py = results
    # seen fires for n=4 (asserting n=99) and again for n=99 (a duplicate, ignored)
    assert [f.rule for f in c.firings] == ["start", "a:b", "a:b", "a:b", "seen", "seen"]
    assert c.firings[4].facts == (1,)  # the item (f-1, modified in place); exists and test are `*`, skipped
    assert (c.firings, c.events, c.facts) == (py.firings, py.events, py.facts)


def test_both_recorders_agree_on_many_rules():
    """300 rules (the C recorder's table of rule names grows and is rebuilt several times),
    evaluated twice (names are kept across evaluations)."""
    kb = "(deftemplate n (slot i))\n" + "\n".join(
        f"(defrule rule-{k}-{'x' * (k % 7)} (n (i {k})) => (assert (n (i {k + 1}))))" for k in range(300)
    )
    results = []
    for native in (True, False):
        engine = ForwardEngine.from_knowledge_base(
            rules.knowledge_base_from_text("many", kb), config=EngineConfig(workers=1, native=native)
        )
        first = engine.evaluate([Fact("n", {"i": 0})])
        second = engine.evaluate([Fact("n", {"i": 150})])
        results.append((first, second))
        engine.close()
    (c1, c2), (p1, p2) = results
    assert len(c1.firings) == 300 and len(c2.firings) == 150
    assert c1.firings[7].rule == "rule-7-" and c2.firings[0].rule == "rule-150-" + "x" * (150 % 7)
    assert (c1.firings, c1.events, c2.firings, c2.events) == (p1.firings, p1.events, p2.firings, p2.events)
