"""experta backend: time limits inside experta's own calls, CLIPS's modify semantics, None values.

Cases of issue 17 (../shared/cases/clips/experta_*.py): a 5 s limit stopped an OR-constraint
explosion only after 18 s and building the engine had no limit; modifying a fact twice in one
firing raised IndexError where CLIPS (modify2.clp) ends with (lamp (state on)); None was refused.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from experta import AS, Fact, KnowledgeEngine, L, Rule

from chaining.forward import EngineConfig, EvaluationTimeout, ExpertaEngine, ForwardEngine, KnowledgeBaseLoadError

CASES = Path(__file__).resolve().parents[2] / "regressions" / "cases" / "clips"


class Sensor(Fact):
    pass


def or_rule_engine(k: int) -> type:
    """One rule, `k` patterns, each with a 5-way OR field constraint (experta_or_constraints.py)."""
    patterns = [Sensor(kind=f"k{i}", level=L("a") | L("b") | L("c") | L("d") | L("e")) for i in range(k)]

    def alarm(self):
        print("alarm")

    return type(f"OrRule{k}", (KnowledgeEngine,), {"alarm": Rule(*patterns)(alarm)})


def test_building_stops_within_its_limit():
    # k=6 builds for 1-80 s depending on the machine: a 0.2 s limit is crossed on any of them. (A larger
    # k is no stronger test: experta then spends seconds inside single C calls, where no thread can be
    # interrupted, and its memory grew to 8 GB in a CI dry run.)
    limit = 0.2
    t0 = time.perf_counter()
    with pytest.raises(KnowledgeBaseLoadError, match="took longer than its time limit of 0.2 s"):
        ExpertaEngine(or_rule_engine(6), fact_types={"sensor": Sensor}, config=EngineConfig(load_timeout=limit))
    assert time.perf_counter() - t0 < limit * 1.2 + 3.0  # slack for a shared, loaded machine (it took 14-80 s)


class Spin(Fact):
    pass


class Spinner(KnowledgeEngine):
    @Rule(Spin(n=L(1)))
    def spin(self):
        print("spinning")
        x = 0
        while True:  # one right-hand side that never returns
            x += 1

    @Rule(Spin(n=L(2)))
    def quick(self):
        print("quick")


def test_evaluation_stops_inside_a_long_call_and_the_engine_is_rebuilt():
    engine = ExpertaEngine(Spinner, fact_types={"spin": Spin}, config=EngineConfig(timeout=0.5))
    t0 = time.perf_counter()
    with pytest.raises(EvaluationTimeout) as info:
        engine.evaluate([{"template": "spin", "slots": {"n": 1}}])
    assert time.perf_counter() - t0 < 0.5 * 1.2 + 2.0  # slack for a shared, loaded machine
    assert info.value.partial.output == "spinning\n"
    assert [f.rule for f in info.value.partial.firings] == ["spin"]
    result = engine.evaluate([{"template": "spin", "slots": {"n": 2}}])  # a new experta engine
    assert result.output == "quick\n"


class Lamp(Fact):
    pass


class TwoStepModify(KnowledgeEngine):
    @Rule(AS.lamp << Lamp(state="off"))
    def switch_on(self, lamp):
        self.modify(lamp, state="warming")
        self.modify(lamp, state="on")


class ModifyThenRetract(KnowledgeEngine):
    @Rule(AS.lamp << Lamp(state="off"))
    def switch_off(self, lamp):
        self.modify(lamp, state="broken")
        self.retract(lamp)


def _slots(facts):
    return [(f.template, f.slots) for f in facts]


def test_modify_twice_in_one_firing_ends_as_in_clips():
    experta_result = ExpertaEngine(TwoStepModify, fact_types={"lamp": Lamp}).evaluate(
        [{"template": "lamp", "slots": {"state": "off"}}]
    )
    with ForwardEngine.from_files([CASES / "modify2.clp"], config=EngineConfig(workers=1)) as clips_engine:
        clips_result = clips_engine.evaluate()
    assert _slots(experta_result.facts) == _slots(clips_result.facts) == [("lamp", {"state": "on"})]
    assert [f.rule for f in experta_result.firings] == ["switch_on"]


def test_retract_of_a_modified_handle_retracts_the_modified_fact():
    result = ExpertaEngine(ModifyThenRetract, fact_types={"lamp": Lamp}).evaluate(
        [{"template": "lamp", "slots": {"state": "off"}}]
    )
    assert result.facts == []


class Cell(Fact):
    pass


class Empty(KnowledgeEngine):
    @Rule(Cell(value=L(None)))
    def empty(self):
        print("empty cell")


def test_none_is_a_slot_value():
    engine = ExpertaEngine(Empty, fact_types={"cell": Cell})
    result = engine.evaluate(
        [{"template": "cell", "slots": {"value": None}}, {"template": "cell", "slots": {"value": 3}}]
    )
    assert result.output == "empty cell\n"
    assert [f.slots for f in result.facts] == [{"value": None}, {"value": 3}]
    assert result.to_dict()["facts"][0]["slots"] == {"value": None}
    with pytest.raises(Exception, match=r"facts\[1\]"):  # the other checks still apply, located
        engine.evaluate([{"template": "cell", "slots": {"value": None}}, {"template": "cell", "slots": {"value": {}}}])
