"""The rails knowledge base on real CLIPS."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaining.forward import ForwardEngine

KB = Path(__file__).resolve().parents[2] / "knowledge_bases" / "demo_rails.clp"


@pytest.fixture(scope="module")
def rails():
    with ForwardEngine.from_files([KB]) as e:
        yield e


def _verdict(rails, **slots):
    template = "prompt" if "delta" not in slots else "completion"
    r = rails.evaluate([{"template": template, "slots": slots}])
    facts = r.facts_of("rail")
    return None if not facts else {k: str(v) for k, v in facts[-1].slots.items()}


@pytest.mark.parametrize(
    "prompt,blocked",
    [
        ("ROMEO:\n", False),
        ("Pay card 4539 1488 0343 6467 now", True),
        ("mail juliet@verona.example", True),
        ("x" * 401, True),
        ("Order 12 ducats and 300 more", False),
    ],
)
def test_input_rail(rails, prompt, blocked):
    v = _verdict(rails, text=prompt)
    assert (v is not None and v["action"] == "block") == blocked


def test_redaction_is_whole_word_and_case_insensitive(rails):
    v = _verdict(rails, text="O Romeo, villainous knave", delta="O Romeo, villainous knave", tokens=5, finished="FALSE")
    assert v["action"] == "rewrite" and v["text"] == "O [name], villainous [redacted]"


def test_new_speaker_stops_and_keeps_the_text_before_it(rails):
    text = "Good morrow.\nI go.\nKING RICHARD III:\nNow"
    v = _verdict(rails, text=text, delta="I go.\nKING RICHARD III:\nNow", tokens=9, finished="FALSE")
    assert v["action"] == "stop" and v["text"] == "I go.\n"


def test_length_rail_cuts_at_sixty_words(rails):
    shown = " ".join(["word"] * 58)
    delta = " one two three four"
    v = _verdict(rails, text=shown + delta, delta=delta, tokens=70, finished="FALSE")
    assert v["action"] == "stop" and v["text"] == " one two ..."
    full = " ".join(["word"] * 60) + " "
    v = _verdict(rails, text=full + "more ", delta="more ", tokens=70, finished="FALSE")
    assert v["action"] == "stop" and v["text"] == "..."  # nothing of the delta fits: no doubled space


def test_content_rail_stops_on_the_second_violent_word(rails):
    assert _verdict(rails, text="the blood of", delta="the blood of", tokens=3, finished="FALSE") is None
    v = _verdict(rails, text="the blood of kings, slain", delta=" kings, slain", tokens=6, finished="FALSE")
    assert v["action"] == "stop" and "content" in v["reason"]
