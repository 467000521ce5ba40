"""Time and memory limits: after `os.fork`, on memory-hungry rules, and loading apart from running."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from chaining.forward import (
    EngineConfig,
    EvaluationTimeout,
    ForwardEngine,
    KnowledgeBaseLoadError,
    MemoryLimitError,
)

SPIN = [("spin.clp", "(defrule spin => (while TRUE do (bind ?x 1)))")]
# Doubles a string each iteration: 16 B, 32 B, ... 512 MiB within about a second, then 1 GiB.
STR_CAT_BOMB = [
    ("bomb.clp", '(defrule bomb => (bind ?s "aaaaaaaaaaaaaaaa") (while TRUE do (bind ?s (str-cat ?s ?s))))')
]


def _evaluate_in_child(engine, queue):
    t0 = time.perf_counter()
    try:
        engine.evaluate(timeout=0.5)
        queue.put(("finished", time.perf_counter() - t0))
    except EvaluationTimeout:
        queue.put(("timeout", time.perf_counter() - t0))


@pytest.mark.parametrize("method", ["os.fork", "multiprocessing"])
def test_time_limit_works_in_a_process_forked_after_the_engine_was_used(method):
    import os

    engine = ForwardEngine.from_sources(SPIN, config=EngineConfig(workers=1, timeout=0.2))
    with pytest.raises(EvaluationTimeout):  # the watchdog thread now runs in this process
        engine.evaluate()
    if method == "os.fork":
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                t0 = time.perf_counter()
                try:
                    engine.evaluate(timeout=0.5)
                    os.write(write, b"finished")
                except EvaluationTimeout:
                    os.write(write, f"timeout {time.perf_counter() - t0:.3f}".encode())
            finally:
                os._exit(0)
        os.close(write)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
            time.sleep(0.05)
        else:
            if time.monotonic() >= deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                pytest.fail("the forked child's evaluation was never stopped")
        kind, seconds = os.read(read, 100).decode().split()
        os.close(read)
    else:
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_evaluate_in_child, args=(engine, queue))
        child.start()
        child.join(20)
        if child.is_alive():
            child.kill()
            pytest.fail("the forked child's evaluation was never stopped")
        kind, seconds = queue.get(timeout=5)
    assert kind == "timeout"
    assert float(seconds) < 0.5 * 1.2 + 2.0  # the limit plus polling and slack for a shared, loaded machine
    engine.close()


def test_str_cat_bomb_is_stopped_by_the_memory_limit_well_within_the_time_limit():
    config = EngineConfig(workers=1, timeout=10.0, memory_limit=256 << 20)
    with ForwardEngine.from_sources(STR_CAT_BOMB, config=config) as engine:
        t0 = time.perf_counter()
        with pytest.raises(MemoryLimitError) as info:
            engine.evaluate()
        assert time.perf_counter() - t0 < 10.0 * 1.2
        assert "memory limit of 268435456 bytes" in str(info.value)
        assert engine.environments == 1
        # still usable: the halt flags were cleared (a limit of 0 resets and fires nothing, as (run 0))
        assert engine.evaluate(max_firings=0).firings == []


def test_loading_has_its_own_time_limit_apart_from_the_run():
    slow = [("slow.clp", "(defglobal ?*x* = (progn (loop-for-count (?i 1 20000000) do (bind ?y ?i)) 1))")]
    with pytest.raises(KnowledgeBaseLoadError) as info:
        ForwardEngine.from_sources(slow, config=EngineConfig(workers=1, timeout=100.0, load_timeout=0.2))
    assert "loading the knowledge base took longer than its time limit of 0.2 s" in str(info.value)
    # a short run limit does not limit loading
    fast_run = EngineConfig(workers=1, timeout=0.01, load_timeout=100.0)
    with ForwardEngine.from_sources([("ok.clp", "(defglobal ?*x* = (+ 1 2))")], config=fast_run) as engine:
        assert engine.evaluate().firings == []


def test_memory_limit_setting_is_validated():
    with pytest.raises(ValueError, match="memory_limit"):
        EngineConfig(memory_limit=0)
    with pytest.raises(ValueError, match="load_timeout"):
        EngineConfig(load_timeout=-1)
