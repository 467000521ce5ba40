"""`workbench kb run` and the shipped knowledge bases."""

from __future__ import annotations

import json
from itertools import permutations
from pathlib import Path

import pytest
from fwd_oracle import program, run_raw
from typer.testing import CliRunner

from cli import app

ROOT = Path(__file__).resolve().parents[3]
KB = ROOT / "knowledge_bases"
PROGRAMS = ROOT / "tests" / "chaining" / "programs"


def kb_run(*args: str):
    return CliRunner().invoke(app, ["kb", "run", *map(str, args)])


CLI_PROGRAMS = [
    p for p in sorted(PROGRAMS.glob("*.clp")) if not program(p).functions
]  # the CLI registers no Python functions


@pytest.mark.parametrize("path", CLI_PROGRAMS, ids=[p.stem for p in CLI_PROGRAMS])
def test_prints_exactly_what_clips_prints(tmp_path, path):
    prog = program(path)
    args = [prog.path, "--strategy", prog.strategy]
    if prog.facts:
        facts = tmp_path / "facts.json"
        facts.write_text(json.dumps(prog.facts))
        args += ["--facts", facts]
    if prog.seed is not None:
        args += ["--seed", str(prog.seed)]
    result = kb_run(*args)
    assert result.exit_code == 0, result.output
    raw = run_raw(prog)
    assert result.stdout == raw.output
    doc = json.loads(kb_run(*args, "--json").stdout)
    assert [(f["rule"], tuple(f["facts"])) for f in doc["firings"]] == raw.firings


def test_json_shape_and_firings_match_raw_clips():
    prog = program(PROGRAMS / "13_fact_address.clp")
    result = kb_run(prog.path, "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert {"output", "firings", "facts"} <= set(doc)
    raw = run_raw(prog)
    assert doc["output"] == raw.output
    assert [(f["rule"], tuple(f["facts"])) for f in doc["firings"]] == raw.firings
    assert all(set(f) == {"id", "template", "slots"} for f in doc["facts"])
    assert {f["template"] for f in doc["facts"]} == {"account"}


def test_strategy_option():
    prog = program(PROGRAMS / "16_strategies.clp")
    for strategy in ("breadth", "simplicity"):
        result = kb_run(prog.path, "--strategy", strategy, "--json")
        raw = run_raw(prog, strategy)
        assert [(f["rule"], tuple(f["facts"])) for f in json.loads(result.stdout)["firings"]] == raw.firings


def test_summary_on_stderr_and_exit_codes(tmp_path):
    result = kb_run(KB / "logic_puzzle.clp")
    assert result.exit_code == 0 and "firings" in result.stderr and "firings" not in result.stdout
    loop = tmp_path / "loop.clp"
    loop.write_text("(deffacts s (n 0))\n(defrule up ?f <- (n ?x) => (retract ?f) (assert (n (+ ?x 1))))\n")
    result = kb_run(loop, "--max-firings", "50")
    assert result.exit_code == 2
    assert "stopped after 50 firings" in result.stderr and "last rules fired: up" in result.stderr
    result = kb_run(loop, "--max-firings", "50", "--json")
    assert result.exit_code == 2 and len(json.loads(result.stdout)["firings"]) == 50


def test_bad_inputs_give_clear_errors(tmp_path):
    bad = tmp_path / "bad.clp"
    bad.write_text("(defrule r (a ?x) =>\n  (printout t ?y crlf))\n")
    result = kb_run(bad)
    assert result.exit_code == 1 and "bad.clp:" in result.stderr and "Traceback" not in result.stderr
    facts = tmp_path / "facts.json"
    facts.write_text('[{"template": "observation", "slots": {"attribute": "hair", "valu": "yes"}}]')
    result = kb_run(KB / "animals.clp", "--facts", facts)
    assert result.exit_code == 1 and "facts[0].slots.valu" in result.stderr
    facts.write_text('[{"template": "observation", "slots": {')
    result = kb_run(KB / "animals.clp", "--facts", facts)
    assert result.exit_code == 1 and "facts.json:1:" in result.stderr and "invalid JSON" in result.stderr
    result = kb_run(KB / "animals.clp", "--strategy", "fastest")
    assert result.exit_code == 1 and "unknown strategy 'fastest'" in result.stderr
    result = kb_run(tmp_path / "missing.clp")
    assert result.exit_code == 1 and "Traceback" not in result.stderr


# --- shipped knowledge bases -------------------------------------------------------------------


def test_animals_kb_with_example_facts():
    result = kb_run(KB / "animals.clp", "--facts", KB / "animals.facts.json")
    assert result.exit_code == 0 and result.stdout == "identified: tiger\n"


def test_animals_kb_truth_maintenance():
    import rules
    from chaining.forward import ForwardEngine

    engine = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([KB / "animals.clp"]))
    res = engine.evaluate([{"template": "observation", "slots": {"attribute": "feathers", "value": "no"}}])
    assert res.output.startswith("identified: nothing")
    assert {str(f.slots["name"]) for f in res.facts_of("class")} == set()


def test_monkey_and_bananas_plan():
    result = kb_run(KB / "monkey_bananas.clp")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "Monkey jumps off the green-couch onto the floor.",
        "Monkey walks from t5-7 to t7-7.",
        "Monkey pushes the ladder from t7-7 to t2-2.",
        "Monkey climbs onto the ladder.",
        "Monkey grabs the bananas standing on the ladder.",
        "Monkey eats the bananas.",
    ]
    doc = json.loads(kb_run(KB / "monkey_bananas.clp", "--json").stdout)
    assert not [f for f in doc["facts"] if f["template"] == "goal"]  # every goal achieved


def _brute_force_puzzle():
    people = ["ann", "bob", "cat", "dan"]
    out = []
    for pos in permutations([1, 2, 3, 4]):
        for pet in permutations(["dog", "fish", "bird", "horse"]):
            for dr in permutations(["tea", "milk", "coffee", "water"]):
                a = {p: (pos[i], pet[i], dr[i]) for i, p in enumerate(people)}

                def who(k, v, a=a):
                    return next(p for p in people if a[p][k] == v)

                if (
                    a[who(2, "tea")][0] == 2
                    and a["bob"][0] == 4
                    and a[who(1, "bird")][0] == 1
                    and a["dan"][1] == "horse"
                    and abs(a[who(2, "milk")][0] - a[who(2, "coffee")][0]) == 1
                    and a["cat"][2] not in ("coffee", "milk")
                    and a[who(1, "dog")][0] < a["dan"][0]
                    and a["ann"][2] != "water"
                    and a[who(1, "fish")][2] == "coffee"
                ):
                    out.append(a)
    return out


def test_logic_puzzle_unique_solution_matches_brute_force():
    doc = json.loads(kb_run(KB / "logic_puzzle.clp", "--json").stdout)
    got = {
        f["slots"]["implied"][0]: tuple(f["slots"]["implied"][1:]) for f in doc["facts"] if f["template"] == "solution"
    }
    (expected,) = _brute_force_puzzle()
    assert got == expected
    assert doc["output"].endswith("1 solution(s)\n")


@pytest.mark.parametrize(
    "facts,expected",
    [
        ([], ["no fault found"]),
        (
            [("symptom", {"name": "engine-does-not-crank"})],
            ["fault: starter-motor (serious): test the starter relay and motor"],
        ),
        (
            [("symptom", {"name": "engine-does-not-crank"}), ("reading", {"gauge": "battery-voltage", "value": 10.9})],
            ["fault: dead-battery (moderate): charge or replace the battery"],
        ),
        (
            [
                ("symptom", {"name": "engine-cranks-normally"}),
                ("symptom", {"name": "engine-does-not-start"}),
                ("symptom", {"name": "fuel-gauge-empty"}),
            ],
            ["fault: fuel-system (minor): check the fuel level and the fuel pump"],
        ),
        (
            [("symptom", {"name": "engine-cranks-normally"}), ("symptom", {"name": "engine-does-not-start"})],
            ["fault: ignition (moderate): inspect the spark plugs and the ignition coil"],
        ),
        (
            None,
            [
                "fault: head-gasket (critical): stop driving; pressure-test the cooling system",
                "fault: dead-battery (moderate): also check: dead-battery",
            ],
        ),
    ],
)
def test_fault_diagnosis(tmp_path, facts, expected):
    if facts is None:
        path = KB / "fault_diagnosis.facts.json"
    else:
        path = tmp_path / "f.json"
        path.write_text(json.dumps([{"template": t, "slots": s} for t, s in facts]))
    result = kb_run(KB / "fault_diagnosis.clp", "--facts", path)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == expected


def test_facts_from_stdin():
    facts = json.dumps(
        [
            {"template": "observation", "slots": {"attribute": "feathers", "value": "yes"}},
            {"template": "observation", "slots": {"attribute": "flies", "value": "no"}},
            {"template": "observation", "slots": {"attribute": "swims", "value": "yes"}},
            {"template": "observation", "slots": {"attribute": "colour", "value": "black-and-white"}},
        ]
    )
    result = CliRunner().invoke(app, ["kb", "run", str(KB / "animals.clp"), "--facts", "-"], input=facts)
    assert result.exit_code == 0 and result.stdout == "identified: penguin\n"
