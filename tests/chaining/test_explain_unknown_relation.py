"""Review finding 07: `kb explain --fact` over a misspelt relation is the same error as `kb ask`'s
(did-you-mean, exit 1), not an empty WHY NOT with exit 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app

ZOO = Path(__file__).resolve().parents[2] / "knowledge_bases" / "zoo.clp"
MESSAGE = (
    "goal:1:2: the goal uses relation animl, which no rule, fact, template or askable defines; did you mean animal?"
)


@pytest.mark.parametrize("mode", [["--backward", "--why-not"], ["--why-not"], ["--backward"], []])
def test_explain_refuses_an_unknown_relation_as_ask_does(mode):
    r = CliRunner().invoke(app, ["kb", "explain", str(ZOO), "--fact", "(animl zebra)", *mode])
    ask = CliRunner().invoke(app, ["kb", "ask", str(ZOO), "(animl zebra)"])
    assert r.exit_code == ask.exit_code == 1
    assert MESSAGE in r.stderr and MESSAGE in ask.stderr and "WHY NOT" not in r.output


def test_a_relation_only_the_given_facts_define_is_explained(tmp_path):
    facts = tmp_path / "f.json"
    facts.write_text('[{"template": "animl", "values": ["zebra"]}]')
    r = CliRunner().invoke(app, ["kb", "explain", str(ZOO), "--fact", "(animl zebra)", "--backward", "--why-not"])
    assert r.exit_code == 1
    r = CliRunner().invoke(
        app, ["kb", "explain", str(ZOO), "--fact", "(animl lion)", "--why-not", "--facts", str(facts)]
    )
    assert r.exit_code == 0, r.output
    assert "WHY NOT (animl lion)" in r.stdout
