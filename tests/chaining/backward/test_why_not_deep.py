"""WHY NOT follows the failing premise down (with its bindings) to facts and askable answers, says
which answer failed it, and prunes rules whose conclusion cannot match; `kb explain` exits 1 when
no fact matches."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import rules
from chaining.backward import ScriptedProvider, Session
from chaining.explain import why_not_sync
from cli.app import app

KB_DIR = Path(__file__).resolve().parents[3] / "knowledge_bases"
CHEETAH_BUT_NO_SPOTS = {"hair", "eats-meat", "tawny"}
FEATURES = ["hair", "gives-milk", "feathers", "flies", "lays-eggs", "eats-meat", "pointed-teeth", "claws",
            "forward-eyes", "hoofs", "chews-cud", "tawny", "dark-spots", "black-stripes", "long-neck", "long-legs",
            "black-and-white", "swims", "flies-well"]  # fmt: skip


def script(present: set[str]) -> dict[str, str]:
    return {f"(feature (name {f}))": "yes" if f in present else "no" for f in FEATURES}


def session() -> Session:
    return Session(
        rules.load_knowledge_base(KB_DIR / "zoo.clp"), provider=ScriptedProvider(script(CHEETAH_BUT_NO_SPOTS))
    )


def test_failing_askable_premise_names_the_answer_and_other_rules_are_pruned() -> None:
    w = why_not_sync(session(), "(animal cheetah)")
    assert not w.holds
    (r,) = w.rules  # the 6 rules concluding other animals are pruned, not listed as failures
    assert sorted(w.pruned) == ["albatross", "giraffe", "ostrich", "penguin", "tiger", "zebra"]
    assert r.rule == "cheetah" and r.index == 2 and r.premise == "(feature (name dark-spots) (value yes))"
    assert r.answer == "Does the animal have this feature: dark-spots? -> no (script)"
    assert "answered Does the animal have this feature: dark-spots? -> no" in r.label


def test_failing_derived_premise_is_followed_down() -> None:
    w = why_not_sync(session(), "(animal giraffe)")
    (r,) = w.rules
    assert r.premise == "(category ungulate)" and r.sub is not None and r.sub.goal == "(category ungulate)"
    subs = {x.rule: x for x in r.sub.rules}
    assert set(subs) == {"ungulate-by-hoofs", "ungulate-by-cud"}
    assert subs["ungulate-by-hoofs"].answer.endswith("hoofs? -> no (script)")
    assert set(r.sub.pruned) == {"carnivore-by-meat", "carnivore-by-anatomy"}
    doc = w.to_dict()
    assert doc["rules"][0]["because"]["rules"][0]["answer"].endswith("-> no (script)")


def test_explain_exits_1_when_no_fact_matches(tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(app, ["kb", "explain", str(KB_DIR / "family.clp"), "--fact", "(ancestor zed ?x)"])
    assert r.exit_code == 1 and "no fact matching (ancestor zed ?x)" in r.output
    r = runner.invoke(app, ["kb", "explain", str(KB_DIR / "family.clp"), "--fact", "(ancestor zed ?x)", "--json"])
    assert r.exit_code == 1 and json.loads(r.stdout)["facts"] == []
    answers = tmp_path / "a.json"
    answers.write_text(json.dumps(script(CHEETAH_BUT_NO_SPOTS)))
    r = runner.invoke(
        app,
        ["kb", "explain", str(KB_DIR / "zoo.clp"), "--fact", "(animal giraffe)", "--backward", "--why-not",
         "--answers", str(answers)],
    )  # fmt: skip
    assert r.exit_code == 0 and "WHY NOT (category ungulate): no proof" in r.stdout
