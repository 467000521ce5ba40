"""Smallest inputs of the defects a reviewer found in the backward prover after issue 18."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rules
from chaining.backward import Session
from cli.kb_ask_run import fast_main

CASES = Path(__file__).resolve().parents[2] / "regressions" / "cases" / "backward_review"


def test_certainty_factors_with_a_limit_count_the_answers_given(capsys: pytest.CaptureFixture) -> None:
    # with certainty factors every answer was collected, then cut to `limit`: count stayed 3
    kb = rules.load_knowledge_base([CASES / "cfm.clp"])
    r = Session(kb).prove_sync("(p ?x)", limit=1)
    assert len(r.answers) == 1 and r.count == 1 and not r.complete
    assert fast_main([str(CASES / "cfm.clp"), "(p ?x)", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["answers"]) == 1 and doc["count"] == 1
    assert fast_main([str(CASES / "cfm.clp"), "(p ?x)"]) == 0
    out = capsys.readouterr().out
    assert "(first answer only; --all for every answer)" in out and "first 3" not in out
