"""The firing and fact trace taken from CLIPS's callbacks (not from `(watch ...)` output).

Every test runs with both recorders (`clips_recorder`): the C callbacks (`native_trace.c`, skipped
when not built) and the Python callbacks.
"""

from __future__ import annotations

import os

import pytest

import rules
from chaining.forward import EngineConfig, FiringLimitError, ForwardEngine, RuleExecutionError, native_trace
from chaining.forward.result import FactEvent, Firing
from rules.facts import Fact

_RECORDER = {"native": True}


@pytest.fixture(autouse=True, params=["native", "python"])
def recorder(request):
    if request.param == "native" and not native_trace.AVAILABLE:
        pytest.skip(f"C trace recorder: {native_trace.UNAVAILABLE}")
    _RECORDER["native"] = request.param == "native"
    return request.param


def _engine(text: str, **config) -> ForwardEngine:
    config.setdefault("native", _RECORDER["native"])
    return ForwardEngine.from_knowledge_base(
        rules.knowledge_base_from_text("trace", text), config=EngineConfig(workers=1, **config)
    )


def test_output_that_looks_like_watch_lines_stays_output():
    """A program may print exactly what CLIPS's watch output looks like; it is output, not trace."""
    kb = """
    (deftemplate p (slot x))
    (defrule r ?f <- (p (x 1)) =>
      (printout t "FIRE    1 r: f-1" crlf)
      (printout t "==> f-9     (p (x 7))" crlf "<== " "f-1     " "(p (x 1))" crlf)
      (modify ?f (x 2)))
    """
    result = _engine(kb).evaluate([Fact("p", {"x": 1})])
    assert result.output == "FIRE    1 r: f-1\n==> f-9     (p (x 7))\n<== f-1     (p (x 1))\n"
    assert result.firings == [Firing("r", (1,))]
    # modify keeps the id: a retract then an assert of f-1, both made by firing 0
    assert result.events == [FactEvent("retract", 1, 0), FactEvent("assert", 1, 0)]
    assert [(f.id, f.slots["x"]) for f in result.facts] == [(1, 2)]


def test_many_firings_keep_order_and_ids():
    """More firing lines than the C buffer holds before it is drained to Python (64 KiB)."""
    name = "a-rule-with-a-rather-long-name-so-that-each-activation-line-is-long"
    kb = f"""
    (deftemplate n (slot i))
    (defrule {name} ?f <- (n (i ?i&:(< ?i 5000))) => (retract ?f) (assert (n (i (+ ?i 1)))))
    """
    engine = _engine(kb, max_firings=None, timeout=None)
    for _ in range(2):  # and again: nothing left over from the first evaluation
        result = engine.evaluate([Fact("n", {"i": 0})])
        assert len(result.firings) == 5000
        assert all(f.rule == name for f in result.firings)
        assert [f.facts for f in result.firings] == [(i,) for i in range(1, 5001)]
        assert result.facts[0].id == 5001 and result.facts[0].slots["i"] == 5000
        assert len(result.events) == 10000
        assert result.events[:2] == [FactEvent("retract", 1, 0), FactEvent("assert", 2, 0)]


def test_not_and_exists_patterns_contribute_no_id():
    kb = """
    (deftemplate a (slot v))
    (deftemplate b (slot v))
    (defrule r1 (a (v ?v)) (not (b (v ?v))) (exists (a (v 2))) => )
    (defrule r2 => )
    """
    result = _engine(kb).evaluate([Fact("a", {"v": 1}), Fact("a", {"v": 2}), Fact("b", {"v": 2})])
    assert sorted(result.firings) == sorted([Firing("r1", (1,)), Firing("r2", ())])


def test_rules_in_other_modules_are_traced_by_name():
    kb = """
    (defmodule MAIN (export ?ALL))
    (deftemplate MAIN::go (slot to))
    (defrule MAIN::start (go (to CHECK)) => (focus CHECK))
    (defmodule CHECK (import MAIN ?ALL))
    (defrule CHECK::checked (go (to ?m)) => (printout t "in " ?m crlf))
    """
    result = _engine(kb).evaluate([Fact("go", {"to": "CHECK"})])
    assert result.firings == [Firing("start", (1,)), Firing("checked", (1,))]
    assert result.output == "in CHECK\n"


def test_firing_trace_can_be_off():
    kb = """
    (deftemplate p (slot x))
    (defrule r ?f <- (p (x ?x&:(< ?x 3))) => (modify ?f (x (+ ?x 1))))
    """
    result = _engine(kb, trace_firings=False).evaluate([Fact("p", {"x": 0})])
    assert result.firings == []
    assert [f.slots["x"] for f in result.facts] == [3]
    # fact events still name the firing that made them (counted, not recorded)
    assert [e.firing for e in result.events] == [0, 0, 1, 1, 2, 2]
    with pytest.raises(FiringLimitError, match="not traced"):
        _engine("(defrule loop ?f <- (x) => (retract ?f) (assert (x)))", trace_firings=False).evaluate(
            [Fact.ordered("x")], max_firings=10
        )


def test_a_rule_reading_stdin_fails_instead_of_blocking():
    """CLIPS's terminal router is off in engine environments: `(read)` has no source."""
    engine = _engine('(defrule r => (bind ?x (read)) (printout t "got " ?x crlf))', timeout=5.0)
    for _ in range(2):  # the same again: the environment is still usable
        with pytest.raises(RuleExecutionError, match="stdin"):
            engine.evaluate([])


def test_lots_of_output_is_kept_whole():
    kb = '(defrule r => (loop-for-count (?i 1 20000) do (printout t "line " ?i crlf)))'
    result = _engine(kb, timeout=60.0).evaluate([])
    lines = result.output.splitlines()
    assert len(lines) == 20000 and lines[0] == "line 1" and lines[-1] == "line 20000"


def test_an_exception_inside_a_trace_callback_is_raised_after_the_run(monkeypatch, recorder):
    from chaining.forward import clips_runner

    engine = _engine('(defrule r => (printout t "fired" crlf))')
    runner = engine._idle[0]
    real = clips_runner.lib

    class BreakCounter:  # `lib` whose Run first breaks the recorder
        def __getattr__(self, name):
            return getattr(real, name)

        def Run(self, env, limit):
            if recorder == "python":
                runner.recorder.fired = "not a number"  # on_fire's `self.fired += 1` raises TypeError
            else:
                runner.recorder._t.out_of_memory = 1  # what the C recorder sets when realloc fails
            return real.Run(env, limit)

    monkeypatch.setattr(clips_runner, "lib", BreakCounter())
    with pytest.raises(RuntimeError, match="recording the trace failed.*(TypeError|MemoryError)"):
        engine.evaluate([])
    monkeypatch.setattr(clips_runner, "lib", real)
    result = engine.evaluate([])  # the engine is still usable, with nothing left over
    assert result.firings == [Firing("r", ())] and result.output == "fired\n"


def test_the_c_recorder_is_the_default_when_built():
    engine = _engine("(defrule r =>)", native=None)
    assert engine._idle[0].recorder.kind == ("native" if native_trace.AVAILABLE else "python")
    if os.environ.get("WORKBENCH_REQUIRE_NATIVE"):  # set by .ci/run: CI must test the C parts
        from chaining.forward import native_facts

        assert native_trace.AVAILABLE, native_trace.UNAVAILABLE
        assert native_facts.AVAILABLE, native_facts.UNAVAILABLE


def test_native_trace_true_without_the_c_recorder_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(native_trace, "AVAILABLE", False)
    monkeypatch.setattr(native_trace, "UNAVAILABLE", "not built (test)")
    with pytest.raises(RuntimeError, match="C trace recorder is unavailable: not built"):
        _engine("(defrule r =>)", native=True)


def test_a_c_recorder_built_from_another_source_is_not_used(monkeypatch):
    if not native_trace.AVAILABLE:
        pytest.skip(f"C trace recorder: {native_trace.UNAVAILABLE}")
    monkeypatch.setattr(native_trace, "_digest", lambda: "0" * 16)
    ffi, lib, why = native_trace._load()
    assert lib is None and "another version of native_trace.c" in why


def test_a_recorder_dropped_without_close_leaves_the_environment_safe_to_run(recorder):
    """The recorder's finalizer removes its callbacks before freeing what they write into: an
    environment that outlives its recorder runs without calling freed memory."""
    import gc

    from chaining.forward.clips_runner import ClipsRunner

    runner = ClipsRunner(
        [("k.clp", "(deftemplate p (slot x)) (defrule r (p (x ?x)) => (assert (p (x (+ ?x 1)))) )")],
        native=recorder == "native",
    )
    env = runner.env
    del runner
    gc.collect()
    env.assert_string("(p (x 1))")
    assert env.run(5) == 5  # no callback left to call


@pytest.mark.parametrize("instance", ["self-f-7", "a,f-3", "plain"])
def test_instances_in_the_basis_are_not_fact_ids(instance, recorder):
    """Regression: an object pattern's basis item is "[name]"; a name holding "f-7" or a comma
    was read as a fact id (Python recorder) or refused as an unexpected form (C recorder)."""
    kb = f"""
    (defclass THING (is-a USER) (slot v))
    (deftemplate p (slot x))
    (defrule make => (make-instance (sym-cat "{instance}") of THING (v 1)))
    (defrule r1 (object (is-a THING) (v ?v)) (p (x ?v)) => (printout t "matched" crlf))
    """
    result = _engine(kb).evaluate([Fact("p", {"x": 1})])
    assert result.output == "matched\n"
    assert result.firings == [Firing("make", ()), Firing("r1", (1,))]


def test_a_timed_out_run_keeps_the_end_of_its_trace(monkeypatch, recorder):
    """Regression: turning a runaway's whole trace into Python values after its time limit took
    2-3x the limit; the partial result now keeps the last TIMEOUT_TRACE_KEEP firings and their
    fact events, indexed from the first firing kept."""
    from chaining.forward import EvaluationTimeout, clips_runner

    monkeypatch.setattr(clips_runner, "TIMEOUT_TRACE_KEEP", 50)
    kb = "(deftemplate c (slot i)) (defrule step ?f <- (c (i ?i)) => (modify ?f (i (+ ?i 1))))"
    with pytest.raises(EvaluationTimeout, match="keeps the trace of the last 50 firings") as caught:
        _engine(kb).evaluate([Fact("c", {"i": 0})], max_firings=10**9, timeout=0.2)
    partial = caught.value.partial
    assert len(partial.firings) == 50 and all(f == Firing("step", (1,)) for f in partial.firings)
    # each kept firing modified f-1 once: a retract and an assert, indexed 0..49
    assert [e.firing for e in partial.events] == [k for k in range(50) for _ in (0, 1)][: len(partial.events)]
    assert len(partial.events) in (98, 99, 100)  # the halt may stop the last firing before or inside its action
    assert {e.kind for e in partial.events} == {"assert", "retract"}
