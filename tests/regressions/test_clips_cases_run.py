"""Regressions from ../shared/cases/clips (inputs copied to tests/regressions/cases/clips/): programs
`kb check` once refused or the experta backend once got wrong, now run and compared with real CLIPS
(clipspy: load, reset, run, its printed text and final facts as the oracle).

- rhs_return_value_constraint.clp: `=(expr)` as an argument on a right-hand side (CLIPS's
  dilemma1.clp, circuit/electrnc.clp) was a false syntax error;
- field_multifield_slots.clp: `multifield` beside `field` in a deftemplate was refused;
- logical_inside_or.clp: `logical` inside each branch of an `or` was refused;
- orfc.clp: seven patterns with 5-way OR field constraints (the experta explosion's CLIPS twin);
- experta_retract_twice / experta_many_facts: the experta backend against the same rules in CLIPS.
"""

from __future__ import annotations

from pathlib import Path

import clips
import pytest
from experta import AS, MATCH, Fact, KnowledgeEngine, Rule

import rules
from chaining import ExpertaEngine
from chaining.forward import EngineConfig, ForwardEngine

CASES = Path(__file__).parent / "cases" / "clips"


def _clips(path: Path, facts: list[str] = ()) -> tuple[str, list[str], int]:
    """Real CLIPS: (printed text, the template names of the final facts, rules fired)."""
    env = clips.Environment()
    out: list[str] = []

    class Capture(clips.Router):
        def query(self, name):
            return name == "stdout"

        def write(self, name, message):
            out.append(message)

    env.add_router(Capture("capture", 50))
    env.load(str(path))
    env.reset()
    for f in facts:
        env.assert_string(f)
    fired = env.run()
    return "".join(out), sorted(f.template.name for f in env.facts() if f.template.name != "initial-fact"), fired


def _ours(path: Path) -> tuple[str, list[str], int]:
    kb = rules.load_knowledge_base(path)
    with ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1)) as engine:
        result = engine.evaluate()
    return result.output, sorted(f.template for f in result.facts), len(result.firings)


@pytest.mark.parametrize(
    ("case", "printed"),
    [
        ("rhs_return_value_constraint", "depth 2\ndepth 1\ndepth 0\ncount 3\n"),
        ("field_multifield_slots", "bar = (1 2 3)\n"),
        ("logical_inside_or", "x asserted\n"),
        ("orfc", "alarm\n"),
    ],
)
def test_case_runs_as_in_clips(case: str, printed: str) -> None:
    path = CASES / f"{case}.clp"
    assert rules.check_sources([(str(path), path.read_text())]) == []
    ours_out, ours_facts, ours_fired = _ours(path)
    clips_out, clips_facts, clips_fired = _clips(path)
    assert ours_out == clips_out == printed
    assert (ours_fired, ours_facts) == (clips_fired, clips_facts)


class Taken(Fact):
    pass


class Option(Fact):
    pass


class Prune(KnowledgeEngine):
    @Rule(Taken(row=MATCH.r), AS.o << Option(row=MATCH.r))
    def same_row(self, o):
        print("same_row drops", o["name"])
        self.retract(o)

    @Rule(Taken(col=MATCH.c), AS.o << Option(col=MATCH.c))
    def same_col(self, o):
        print("same_col drops", o["name"])
        self.retract(o)


PRUNE_CLP = """
(deftemplate taken (slot row) (slot col))
(deftemplate option (slot row) (slot col) (slot name))
(defrule same_row (taken (row ?r)) ?o <- (option (row ?r) (name ?n)) =>
   (printout t "same_row drops " ?n crlf) (retract ?o))
(defrule same_col (taken (col ?c)) ?o <- (option (col ?c) (name ?n)) =>
   (printout t "same_col drops " ?n crlf) (retract ?o))
"""


def test_experta_retract_twice_drops_each_candidate_once_as_clips(tmp_path: Path) -> None:
    """experta #3 in spirit: after one rule retracts the candidate, the other rule's activation goes."""
    options = ((1, 1, "both"), (1, 2, "row-only"), (2, 1, "col-only"), (2, 2, "free"))
    facts = [{"template": "taken", "slots": {"row": 1, "col": 1}}] + [
        {"template": "option", "slots": {"row": r, "col": c, "name": n}} for r, c, n in options
    ]
    result = ExpertaEngine(Prune, fact_types={"taken": Taken, "option": Option}).evaluate(facts)
    (tmp_path / "prune.clp").write_text(PRUNE_CLP)
    clips_out, _, clips_fired = _clips(
        tmp_path / "prune.clp",
        ["(taken (row 1) (col 1))"] + [f'(option (row {r}) (col {c}) (name "{n}"))' for r, c, n in options],
    )
    assert len(result.firings) == clips_fired == 3
    dropped = sorted(line.rsplit(" ", 1)[1] for line in result.output.splitlines())
    assert dropped == sorted(line.rsplit(" ", 1)[1] for line in clips_out.splitlines())
    assert dropped.count("both") == 1
    assert sorted(f.slots["name"] for f in result.facts if f.template == "option") == ["free"]


class Reading(Fact):
    pass


class Compare(KnowledgeEngine):
    @Rule(Reading(sensor=MATCH.s, value=MATCH.s))
    def same(self, s):
        pass

    @Rule(Reading(sensor=MATCH.s, value=~MATCH.s))
    def different(self, s):
        pass


def test_experta_many_facts_fire_as_clips(tmp_path: Path) -> None:
    """pyknow #12 in spirit (10,000 facts): the firings agree with CLIPS (speed is `bench rules`'s)."""
    n = 2000
    facts = [{"template": "reading", "slots": {"sensor": i, "value": i % 7}} for i in range(n)]
    result = ExpertaEngine(Compare, fact_types={"reading": Reading}).evaluate(facts)
    (tmp_path / "compare.clp").write_text(
        "(deftemplate reading (slot sensor) (slot value))\n"
        "(defrule same (reading (sensor ?s) (value ?s)) =>)\n"
        "(defrule different (reading (sensor ?s) (value ~?s)) =>)\n"
    )
    _, _, clips_fired = _clips(
        tmp_path / "compare.clp",
        [f"(reading (sensor {i}) (value {i % 7}))" for i in range(n)],
    )
    assert len(result.firings) == clips_fired == n
    assert sum(f.rule == "same" for f in result.firings) == 7
