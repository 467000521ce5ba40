"""`workbench kb test`: scenario files run against real CLIPS (forward) and the prover (answers)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaining.scenarios import ScenarioFile, ScenarioFileError, run_scenarios
from cli.app import app

KB = Path(__file__).resolve().parents[2] / "knowledge_bases"


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    shutil.copy(KB / "animals.clp", tmp_path / "animals.clp")
    return tmp_path


def _write(work: Path, text: str) -> Path:
    path = work / "s.yaml"
    path.write_text(text)
    return path


def test_the_shipped_scenarios_pass():
    r = CliRunner().invoke(app, ["kb", "test", str(KB / "animals.test.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["passed"] == 2 and doc["failed"] == 0


FAILING = """knowledge_base: animals.clp
scenarios:
  - name: wrong animal
    facts: [{template: observation, slots: {attribute: feathers, value: "yes"}}]
    expect:
      facts: [{template: class, slots: {name: mammal}}]
      not_facts: [{template: class, slots: {name: bird}}]
      fired: [carnivore-by-diet]
      output: "identified: penguin"
      answers: {goal: "(class (name ?c))", bindings: [{c: fish}]}
  - name: right animal
    facts: [{template: observation, slots: {attribute: feathers, value: "yes"}}]
    expect:
      facts: [{template: class}]
"""


def test_failures_show_expected_and_actual(work):
    results = run_scenarios(ScenarioFile.read(_write(work, FAILING)))
    wrong, right = results
    assert right.passed and not wrong.passed
    by_check = {f.check: f for f in wrong.failures}
    assert set(by_check) == {"facts", "not_facts", "fired", "output", "answers"}
    assert by_check["facts"].expected == "(class (name mammal))"
    assert by_check["facts"].actual == "(class (name bird))"  # the facts of that template that were there
    assert by_check["not_facts"].actual == "(class (name bird))"
    assert by_check["fired"].actual == "bird-by-feathers, report-unknown"  # every rule that fired, in order
    assert by_check["answers"].expected == "{?c=fish}" and by_check["answers"].actual == "{?c=bird}"


def test_cli_exit_codes(work):
    runner = CliRunner()
    failing = runner.invoke(app, ["kb", "test", str(_write(work, FAILING))])
    assert failing.exit_code == 1 and "1 passed, 1 failed" in failing.output and "FAIL" in failing.output
    bad = work / "bad.yaml"
    bad.write_text("knowledge_base: animals.clp\nscenarios:\n  - name: x\n    expect: {fird: [a]}\n")
    malformed = runner.invoke(app, ["kb", "test", str(bad)])
    assert malformed.exit_code == 2
    assert "scenarios[0].expect: unknown check 'fird'" in malformed.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("knowledge_base: a.clp\nscenarios: []\n", "scenarios: expected a non-empty list"),
        ("scenarios: [{name: x, expect: {fired: [r]}}]\n", "knowledge_base: expected a file name"),
        ("knowledge_base: a.clp\nscenarios: [{name: x, expect: {facts: [{slots: {}}]}}]\n", "expect.facts[0]"),
        ("knowledge_base: a.clp\nscenarios: [{name: x, facts: [{template: 1}], expect: {fired: []}}]\n", "facts"),
        ("knowledge_base: a.clp\nscenarios:\n  - {name: x, expect: {fired: []}\n", "s.yaml:4:1: invalid YAML"),
        (
            "knowledge_base: a.clp\nscenarios: [{name: x, expect: {output: o}}, {name: x, expect: {output: o}}]\n",
            "the name 'x' is used twice",
        ),
    ],
)
def test_malformed_files_are_located(work, text, message):
    with pytest.raises(ScenarioFileError, match=None) as err:
        ScenarioFile.read(_write(work, text))
    assert message in str(err.value)


def test_a_knowledge_base_that_does_not_load_exits_1(work):
    (work / "animals.clp").write_text("(defrule broken (a) => (assert (b))")
    r = CliRunner().invoke(app, ["kb", "test", str(_write(work, FAILING))])
    assert r.exit_code == 1 and "animals.clp:1:" in r.output


def test_json_output_is_json_on_errors_too(work):
    bad = work / "bad.yaml"
    bad.write_text("knowledge_base: animals.clp\nscenarios: []\n")
    malformed = CliRunner().invoke(app, ["kb", "test", str(bad), "--json"])
    assert malformed.exit_code == 2 and "non-empty list" in json.loads(malformed.stdout)["error"]
    (work / "animals.clp").write_text("(defrule broken (a) => (assert (b))")
    broken = CliRunner().invoke(app, ["kb", "test", str(_write(work, FAILING)), "--json"])
    assert broken.exit_code == 1 and json.loads(broken.stdout)["diagnostics"][0]["line"] == 1


# Review finding 01: a misspelt template or slot in an expected pattern made `not_facts` pass
# vacuously (and `facts` fail without a hint); both are now located errors of a malformed file.
TYPOS = """knowledge_base: animals.clp
scenarios:
  - name: hair makes a mammal, so this should FAIL
    facts: [{template: observation, slots: {attribute: hair, value: "yes"}}]
    expect:
      not_facts: [{template: class, slots: {nme: mammal}}]
  - name: template typo
    facts: [{template: observation, slots: {attribute: hair, value: "yes"}}]
    expect:
      not_facts: [{template: clas, slots: {name: mammal}}]
"""


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({}, "scenarios[0].expect.not_facts[0]: template class has no slot 'nme'; did you mean 'name'?"),
        ({"slots: {nme: mammal}": "slots: {name: mammal}"}, "scenarios[1].expect.not_facts[0]: template 'clas' is not"),
        (
            {"not_facts: [{template: class, slots: {nme": "facts: [{template: class, slots: {nme"},
            "scenarios[0].expect.facts[0]: template class has no slot",
        ),
        (
            {"slots: {nme: mammal}}": "values: [mammal]}"},
            "scenarios[0].expect.not_facts[0]: 'class' is a deftemplate; give slots, not values",
        ),
    ],
)
def test_patterns_naming_undefined_templates_or_slots_are_malformed(work, edit, message):
    text = TYPOS
    for old, new in edit.items():
        text = text.replace(old, new)
    path = _write(work, text)
    r = CliRunner().invoke(app, ["kb", "test", str(path)])
    assert r.exit_code == 2, r.output
    assert f"{path}: {message}" in r.output
    doc = CliRunner().invoke(app, ["kb", "test", str(path), "--json"])
    assert doc.exit_code == 2 and message in json.loads(doc.stdout)["error"]


def test_a_template_typo_gets_a_did_you_mean(work):
    text = TYPOS.replace("slots: {nme: mammal}", "slots: {name: mammal}")
    with pytest.raises(ScenarioFileError, match=r"template 'clas' is not defined; did you mean 'class'\?"):
        run_scenarios(ScenarioFile.read(_write(work, text)))


# Review finding 04: a goal missing its ')' is a malformed scenario file, with a message about the goal.
def test_a_goal_that_does_not_parse_is_a_malformed_file(work):
    text = FAILING.replace('"(class (name ?c))"', '"(class (name ?c)"')
    r = CliRunner().invoke(app, ["kb", "test", str(_write(work, text))])
    assert r.exit_code == 2, r.output
    assert "scenarios[0].expect.answers.goal: goal:1:17: the goal ends with 1 unclosed '('" in r.output
    assert "=>" not in r.output


def test_the_rule_files_service_reports_a_pattern_typo_as_the_file_error(work):
    from workbench.rule_files import run_scenario_file

    _write(work, TYPOS)
    doc = run_scenario_file(work, "s.yaml")
    assert doc["scenarios"] == [] and "template class has no slot 'nme'" in doc["error"]


def test_unquoted_yes_is_the_symbol_yes_not_a_boolean(work):
    """n16: PyYAML's YAML 1.1 read `value: yes` as a boolean, the fact became `(value TRUE)` and the scenario
    failed with no hint why. Scenario files are read with YAML 1.2's booleans (`true`/`false` only)."""
    path = _write(
        work,
        "knowledge_base: animals.clp\nscenarios:\n  - name: bare yes\n"
        "    facts: [{template: observation, slots: {attribute: hair, value: yes}}]\n"
        "    expect: {fired: [mammal-by-hair], facts: [{template: class, slots: {name: mammal}}]}\n",
    )
    assert ScenarioFile.read(path).scenarios[0].facts[0].slots["value"] == "yes"
    r = CliRunner().invoke(app, ["kb", "test", str(path), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["passed"] == 1
