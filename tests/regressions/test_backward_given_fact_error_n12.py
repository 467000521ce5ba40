"""A given fact that CLIPS refuses (a value outside the slot's allowed values) failed a backward proof
with CLIPS's own unlocated text, "cannot assert (feature (name hair) (value maybe)): [CSTRNCHK1] A literal
slot value found in the 'assert' command does not match ...", and over HTTP (`POST /v1/kb/zoo/ask`,
`/v1/consultations`) with `param: null`, where `POST /v1/kb/zoo/run` names `body.facts[0].slots.value`.
The proof's error now starts with the fact's path, as `kb run` words it (and the API maps that path to
`body.facts[0].slots.value`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaining.backward import Session
from chaining.backward.errors import EvaluationError
from rules import Fact, load_knowledge_base

ZOO = Path(__file__).resolve().parents[2] / "knowledge_bases" / "zoo.clp"


def test_a_refused_given_fact_names_its_slot_and_what_the_template_allows() -> None:
    kb = load_knowledge_base(ZOO)
    good = Fact("feature", {"name": "hair", "value": "yes"})
    bad = Fact("feature", {"name": "hair", "value": "maybe"})
    with pytest.raises(EvaluationError) as info:
        Session(kb, facts=[good, bad]).prove_sync("(animal ?a)", limit=1)
    assert str(info.value) == (
        "facts[1].slots.value: the symbol maybe is not allowed: slot value of feature allows only yes no"
    )
