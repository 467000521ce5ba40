"""The C trace recorder reads a firing's basis from CLIPS's structures once that reading has agreed
with CLIPS's own text of the activation (`native_trace.c`, `WB_VERIFY_FIRINGS`): the trace is the
same as the Python recorder's (which parses CLIPS's text) before, during and after the switch, for
bases with facts, `*` items (not, exists, test) and instances."""

from __future__ import annotations

import pytest

import rules
from chaining.forward import EngineConfig, ForwardEngine, native_trace
from chaining.forward.clips_recorder import direct_layout_known
from rules.facts import Fact

pytestmark = pytest.mark.skipif(not native_trace.AVAILABLE, reason=f"C trace recorder: {native_trace.UNAVAILABLE}")

KB = """
(defclass THING (is-a USER) (slot v))
(deftemplate p (slot x))
(deftemplate q (slot x))
(deftemplate done (slot x))
(defrule make-things (p (x ?x&:(< ?x 3))) => (make-instance (sym-cat "t-f-" ?x) of THING (v ?x)))
(defrule with-instance (object (is-a THING) (v ?v)) (p (x ?v)) (not (done (x ?v))) => (assert (done (x ?v))))
(defrule with-not (p (x ?x)) (not (q (x ?x))) => (assert (q (x ?x))))
(defrule with-exists (exists (q (x ?))) (p (x ?x)) (test (> ?x 5)) (not (done (x ?x))) => (assert (done (x ?x))))
(defrule with-facts ?a <- (p (x ?x)) (q (x ?x)) (done (x ?x)) => (retract ?a))
"""


def _engine(native: bool) -> ForwardEngine:
    kb = rules.knowledge_base_from_text("direct", KB)
    return ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1, native=native))


@pytest.mark.skipif(not direct_layout_known(), reason="this clipspy's CLIPS layouts are not the declared ones")
def test_direct_reading_gives_the_text_readings_trace():
    facts = [Fact("p", {"x": i}) for i in range(12)]
    reference = _engine(False).evaluate(facts)
    assert {f.rule for f in reference.firings} == {
        "make-things",
        "with-instance",
        "with-not",
        "with-exists",
        "with-facts",
    }
    engine = _engine(True)
    recorder = engine._idle[0].recorder
    switched_at = None
    for k in range(40):  # 30+ firings each: past the check of the first firings, then direct
        result = engine.evaluate(facts)
        assert result.firings == reference.firings, k
        assert result.events == reference.events, k
        assert result.facts == reference.facts, k
        if switched_at is None and recorder.reads_directly:
            switched_at = k
    assert switched_at is not None and switched_at < 39  # read directly for the later evaluations
    engine.close()


def test_text_reading_when_direct_reading_is_off():
    """`direct` 0 (an unknown clipspy release): every firing from CLIPS's text, the same trace."""
    facts = [Fact("p", {"x": i}) for i in range(12)]
    reference = _engine(False).evaluate(facts)
    engine = _engine(True)
    recorder = engine._idle[0].recorder
    recorder._t.direct = 0
    for _ in range(12):
        assert engine.evaluate(facts).firings == reference.firings
    assert not recorder.reads_directly
    engine.close()


@pytest.mark.skipif(not direct_layout_known(), reason="this clipspy's CLIPS layouts are not the declared ones")
def test_direct_reading_in_modules_with_logical_and_forall():
    """Rules of several modules (focus moves), a logical CE (its fact retracted with its support)
    and forall: the direct reading gives the text reading's trace after the check."""
    kb = """
    (defmodule MAIN (export deftemplate ?ALL))
    (deftemplate item (slot n) (slot ok))
    (deftemplate tally (slot n))
    (defrule MAIN::go (item (n ?n)) => (focus CHECK))
    (defmodule CHECK (import MAIN deftemplate ?ALL))
    (deftemplate CHECK::seen (slot n))
    (defrule CHECK::mark (logical (item (n ?n) (ok yes))) => (assert (seen (n ?n))))
    (defrule CHECK::all-ok (forall (item (n ?n)) (item (n ?n) (ok yes))) (not (tally)) => (assert (tally (n 0))))
    (defrule CHECK::drop ?i <- (item (n ?n&:(> ?n 3)) (ok yes)) (seen (n ?n)) => (retract ?i))
    """
    facts = [Fact("item", {"n": i, "ok": "yes" if i % 3 else "no"}) for i in range(8)]
    text = rules.knowledge_base_from_text("modules", kb)
    reference = ForwardEngine.from_knowledge_base(text, config=EngineConfig(workers=1, native=False)).evaluate(facts)
    assert len(reference.firings) >= 10
    engine = ForwardEngine.from_knowledge_base(text, config=EngineConfig(workers=1, native=True))
    for _ in range(4):
        result = engine.evaluate(facts)
        assert (result.firings, result.events, result.facts) == (reference.firings, reference.events, reference.facts)
    assert engine._idle[0].recorder.reads_directly
    engine.close()
