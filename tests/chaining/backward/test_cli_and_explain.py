"""`workbench kb ask`, `workbench kb explain` (real CLI) and the explanation module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rules
from chaining import explain
from chaining.backward import PersonProvider, Session
from chaining.forward import ForwardEngine
from cli.app import app

KB_DIR = Path(__file__).resolve().parents[3] / "knowledge_bases"
runner = CliRunner()


def kb(name: str) -> str:
    return str(KB_DIR / name)


def test_ask_json_shape() -> None:
    r = runner.invoke(app, ["kb", "ask", kb("family.clp"), "(ancestor ?x otto)", "--all", "--json", "--proofs", "all"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert {a["bindings"]["x"] for a in doc["answers"]} == {"dora", "gus", "bert", "adam", "eva"}
    first = doc["answers"][0]
    assert set(first) >= {"bindings", "certainty", "proof"} and first["certainty"] is None
    root = doc["steps"][first["proof"]]  # proofs are one flat list of steps; premises are step ids
    assert root["kind"] == "rule" and root["premises"] and all(i < root["id"] for i in root["premises"])
    assert root["label"].startswith(first["fact"])
    assert doc["skipped_rules"] == [] and doc["complete"] is True and doc["count"] == 5
    # without --proofs, JSON carries none
    r = runner.invoke(app, ["kb", "ask", kb("family.clp"), "(ancestor ?x otto)", "--all", "--json"])
    doc = json.loads(r.stdout)
    assert "steps" not in doc and all("proof" not in a for a in doc["answers"])


def test_ask_first_answer_text_and_facts_file(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps([{"template": "parent", "values": ["otto", "zoe"]}]))
    r = runner.invoke(app, ["kb", "ask", kb("family.clp"), "(grandparent ?g zoe)", "--facts", str(facts)])
    assert r.exit_code == 0, r.output
    assert "answer 1: ?g = dora" in r.stdout or "answer 1: ?g = gus" in r.stdout
    assert "by rule grandparent" in r.stdout and "working-memory" in r.stdout
    assert "--all for every answer" in r.stdout


def test_ask_with_scripted_answers(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    present = {"feathers", "swims", "black-and-white"}
    names = [
        "hair",
        "gives-milk",
        "feathers",
        "flies",
        "lays-eggs",
        "long-neck",
        "swims",
        "black-and-white",
        "flies-well",
    ]
    answers.write_text(json.dumps({f"(feature (name {n}))": "yes" if n in present else "no" for n in names}))
    r = runner.invoke(app, ["kb", "ask", kb("zoo.clp"), "(animal ?a)", "--answers", str(answers), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [a["bindings"]["a"] for a in doc["answers"]] == ["penguin"]
    assert doc["questions"] and all(q["source"] == "script" for q in doc["questions"])


def test_ask_missing_scripted_answer_is_a_clear_error(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text("{}")
    r = runner.invoke(app, ["kb", "ask", kb("zoo.clp"), "(animal ?a)", "--answers", str(answers)])
    assert r.exit_code == 1
    assert "no scripted answer for (feature (name hair))" in r.output and "Traceback" not in r.output


def test_ask_terminal_questions_with_why() -> None:
    # hair? why (shows the chain) then yes; the rest answered no except what a cheetah has
    cheetah = {"hair", "eats-meat", "tawny", "dark-spots"}
    order = ["hair", "eats-meat", "tawny", "dark-spots"]  # a ground goal stops at its first proof
    lines = ["why"] + ["yes" if f in cheetah else "no" for f in order] + ["no"] * 20
    r = runner.invoke(app, ["kb", "ask", kb("zoo.clp"), "(animal ?a)"], input="\n".join(lines) + "\n")
    assert r.exit_code == 0, r.output
    assert "WHY: Does the animal have this feature: hair?" in r.output
    assert "(class mammal) by rule mammal-by-hair" in r.output
    assert "answer 1: ?a = cheetah" in r.output


def test_ask_bad_goal_and_bad_file() -> None:
    r = runner.invoke(app, ["kb", "ask", kb("family.clp"), "(ancestor ?x otto"])
    assert r.exit_code == 1 and "goal:1:" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["kb", "ask", kb("family.clp"), "(persn (name ?x))"])
    assert r.exit_code == 1 and "unknown template 'persn'" in r.output
    r = runner.invoke(app, ["kb", "ask", "/nonexistent.clp", "(a)"])
    assert r.exit_code == 1 and "cannot read rule file" in r.output


def test_explain_forward_how_and_why_not() -> None:
    r = runner.invoke(app, ["kb", "explain", kb("family.clp"), "--fact", "(ancestor adam otto)", "--json"])
    assert r.exit_code == 0, r.output
    (d,) = json.loads(r.stdout)["facts"]
    assert d["rule"] == "ancestor-recursive" and d["source"] == "rule"
    leaves = []

    def walk(node):
        if not node["premises"]:
            leaves.append(node)
        for p in node["premises"]:
            walk(p)

    walk(d)
    assert {leaf["fact"] for leaf in leaves} == {"(parent dora otto)", "(parent bert dora)", "(parent adam bert)"}
    assert all(leaf["source"] == "given" for leaf in leaves)
    r = runner.invoke(app, ["kb", "explain", kb("birds.clp"), "--fact", "(flies pingu)", "--why-not"])
    assert r.exit_code == 0, r.output
    assert "rule birds-fly: premise 2 (not (penguin pingu)) failed" in r.stdout


def test_explain_backward() -> None:
    r = runner.invoke(app, ["kb", "explain", kb("birds.clp"), "--fact", "(flies ?x)", "--backward", "--json"])
    assert r.exit_code == 0, r.output
    facts = json.loads(r.stdout)["facts"]
    assert sorted(f["fact"] for f in facts) == ["(flies opus)", "(flies tweety)"]


def test_forward_derivation_graph_matches_firings() -> None:
    k = rules.load_knowledge_base(KB_DIR / "family.clp")
    engine = ForwardEngine.from_knowledge_base(k)
    try:
        result = engine.evaluate([])
    finally:
        engine.close()
    g = explain.derivation_graph(result)
    derived = [f for f in result.facts if f.template == "grandparent"]
    assert derived
    for f in derived:
        firing_nodes = list(g.predecessors(f"f-{f.id}"))
        assert len(firing_nodes) == 1 and g.nodes[firing_nodes[0]]["rule"] == "grandparent"
        d = explain.forward_derivation(result, f.id)
        assert d.rule == "grandparent" and [p.source for p in d.premises] == ["given", "given"]
    with pytest.raises(KeyError):
        explain.forward_derivation(result, 10_000)
    labelled = explain.forward_derivation(result, derived[0].id, sources={derived[0].id - 100: "x"})
    assert labelled.label.startswith(f"f-{derived[0].id} (grandparent")


def test_why_and_how_render() -> None:
    from rich.console import Console

    questions = []

    def person(q):
        questions.append(q)
        return "yes"

    s = Session(rules.load_knowledge_base(KB_DIR / "zoo.clp"), provider=PersonProvider(person))
    r = s.prove_sync("(class ?c)", limit=1)
    console = Console(width=200, record=True)
    console.print(explain.why_tree(questions[0]))
    console.print(explain.how_tree(r.answers[0].proof))
    text = console.export_text()
    assert "WHY: Does the animal have this feature: hair?" in text
    assert "(class mammal)  by rule mammal-by-hair" in text
    assert "answered by person" in text
    assert explain.why_json(questions[0])["why"][0] == "(class ?c) by rule mammal-by-hair"


def test_forward_derivation_unwinds_modified_facts() -> None:
    k = rules.knowledge_base_from_text(
        "m",
        """
(deftemplate counter (slot n (type INTEGER)))
(deffacts f (counter (n 0)) (limit 3))
(defrule up ?c <- (counter (n ?n)) (limit ?l&:(< ?n ?l)) => (modify ?c (n (+ ?n 1))))
(defrule done (counter (n ?n)) (limit ?n) => (assert (finished ?n)))
""",
    )
    engine = ForwardEngine.from_knowledge_base(k)
    try:
        result = engine.evaluate([])
    finally:
        engine.close()
    fin = next(f for f in result.facts if f.template == "finished")
    d = explain.forward_derivation(result, fin.id)
    chain = []
    node = d.premises[0]
    while node.premises:
        chain.append((node.rule, node.firing, node.fact is None))
        node = node.premises[0]
    assert chain == [("up", 2, False), ("up", 1, True), ("up", 0, True)]
    assert node.source == "given" and "modified later by firing #0" in (node.note or "")
    w = explain.forward_why_not(k, result, "(finished 5)")
    assert w.rules[0].premise == "(counter (n 5))" and not w.holds
