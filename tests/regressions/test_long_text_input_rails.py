"""Regression (review): one ~100 KB text made demo_intents' gate scan it character by character
(`longest-digit-run`, quadratic in CLIPS) before the length rule could refuse it: a 500 after the
10 s runaway limit, and other requests waited behind it. demo_rails' card-number rail did the same
to long prompts. Over-long texts are now refused without the scan."""

from __future__ import annotations

from pathlib import Path

import pytest

import rules
from chaining.forward import EngineConfig, ForwardEngine
from rules import Fact

KB = Path(__file__).resolve().parents[2] / "knowledge_bases"


@pytest.mark.parametrize(
    ("kb", "fact", "template", "reason"),
    [
        (
            "demo_intents_gate",
            Fact("request", {"id": "x", "text": rules.String("a" * 100_000), "length": 100_000}),
            "route",
            "the message has 100000 characters",
        ),
        ("demo_rails", Fact("prompt", {"text": rules.String("ROMEO: " * 20_000)}), "rail", "input: 140000 characters"),
    ],
)
def test_an_over_long_text_is_refused_without_scanning_it(kb, fact, template, reason):
    engine = ForwardEngine.from_knowledge_base(
        rules.load_knowledge_base(KB / f"{kb}.clp"), config=EngineConfig(workers=1, timeout=5.0)
    )
    try:
        result = engine.evaluate([fact])  # before the fix: RunawayError after the time limit
    finally:
        engine.close()
    [decision] = result.facts_of(template)
    assert str(decision.slots["reason"]).startswith(reason)
