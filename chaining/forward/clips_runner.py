"""One CLIPS environment holding a compiled knowledge base, evaluated again and again.

Not thread-safe by itself: `ForwardEngine` (clips_engine.py) hands each runner to one thread
at a time. An evaluation is: strategy -> reset -> assert input facts -> run (in chunks when a
firing or time limit applies) -> read working memory and the trace.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

import clips
from clips._clips import ffi, lib

from rules.facts import Fact

from .clips_functions import wrap_function
from .clips_memory import WorkingMemory
from .clips_trace import MessageRouter, OutputRouter, split_trace
from .constructs import ConstructSyntaxError, split_constructs
from .clips_halt import WATCHDOG
from .clips_halt import clear as clear_halt
from .clips_recursion import DEFAULT_MAX_CALL_DEPTH, CallDepthGuard, depth_message, recursive_functions, watch_if_recursive
from .errors import EvaluationTimeout, FactAssertError, FiringLimitError, KnowledgeBaseLoadError, RuleExecutionError
from .result import ForwardResult
from .strategy import Strategy


class ClipsRunner:
    """A CLIPS environment with the knowledge base built into it.

    Args:
        sources: `(file name, text)` pairs, already validated (never unvalidated text: a
            `defglobal` initialiser runs code while it is built).
        functions: Python functions callable from rules by name, e.g. `{"score": fn}`.
        trace_facts: record asserts/retracts of the run through `(watch facts)`.
        build_timeout: seconds the build may take (a `defglobal` initialiser runs code); None: no limit.
        max_call_depth: deepest nesting of calls to recursive deffunctions/generics (`clips_recursion`).

    Raises:
        KnowledgeBaseLoadError: CLIPS refused a construct, or building it ran past `build_timeout`
            (`file:line:col: ...`).
    """

    def __init__(self, sources: Sequence[tuple[str, str]], functions: Mapping[str, Callable] | None = None, *,
                 trace_facts: bool = True, build_timeout: float | None = None,
                 max_call_depth: int = DEFAULT_MAX_CALL_DEPTH):
        self.env = clips.Environment()
        self._e = self.env._env
        self.out = OutputRouter()
        self.msg = MessageRouter()
        self.env.add_router(self.out)
        self.env.add_router(self.msg)
        self.trace_facts = trace_facts
        self._strategy: Strategy | None = None
        for name, fn in (functions or {}).items():
            self.env.define_function(wrap_function(fn), name)
        self._recursive = recursive_functions(sources)
        if self._recursive:  # without a limit, endless recursion overflows the C stack (SIGSEGV)
            self.out.guard = CallDepthGuard(max_call_depth)
        self._build(sources, build_timeout)
        self.env.eval("(watch rules)")
        if trace_facts:
            self.env.eval("(watch facts)")
        self.memory = WorkingMemory(self.env)
        self._templates = self._template_ptrs()
        self.evaluations = 0

    def _build(self, sources: Sequence[tuple[str, str]], timeout: float | None = None) -> None:
        for file, text in sources:
            try:
                constructs = split_constructs(text, file)
            except ConstructSyntaxError as exc:
                raise KnowledgeBaseLoadError(str(exc)) from None
            for c in constructs:
                self.msg.pieces.clear()
                if timeout is not None:
                    WATCHDOG.arm(self._e, time.perf_counter() + timeout)
                try:
                    ret = lib.Build(self._e, c.text.encode())
                finally:
                    if timeout is not None and WATCHDOG.disarm(self._e):
                        raise KnowledgeBaseLoadError(f"{c.file}:{c.line}:{c.column}: building this {c.kind} took longer than "
                                                     f"the time limit of {timeout} s (an expression that never returns?)")
                guard = self.out.guard
                if guard is not None:
                    if guard.tripped is not None:
                        clear_halt(self._e)
                        raise KnowledgeBaseLoadError(f"{c.file}:{c.line}:{c.column}: building this {c.kind}: "
                                                     f"{depth_message(guard)}")
                    if ret == lib.BE_NO_ERROR:
                        watch_if_recursive(self._e, c.text, self._recursive)
                if ret != lib.BE_NO_ERROR:
                    detail = " ".join("".join(p for _, p in self.msg.pieces).split()) or f"CLIPS build error {ret}"
                    raise KnowledgeBaseLoadError(f"{c.file}:{c.line}:{c.column}: CLIPS refused this {c.kind}: {detail}")
        self.msg.pieces.clear()
        self.out.pieces.clear()

    def _template_ptrs(self) -> list[Any]:
        out = []
        t = lib.GetNextDeftemplate(self._e, ffi.NULL)
        while t != ffi.NULL:
            out.append(t)
            t = lib.GetNextDeftemplate(self._e, t)
        return out

    def _watch_facts(self, flag: bool) -> None:
        for t in self._templates:
            lib.DeftemplateSetWatch(t, flag)

    def evaluate(
        self,
        facts: Sequence[Fact],
        *,
        strategy: Strategy,
        max_firings: int | None,
        timeout: float | None,
        seed: int | None = None,
        run_chunk: int = 2000,
        templates: frozenset[str] | None = None,
    ) -> ForwardResult:
        """See `ForwardChainer.evaluate`; `facts` are already `Fact` objects."""
        t0 = time.perf_counter()
        e = self._e
        if strategy != self._strategy:
            lib.SetStrategy(e, int(strategy))
            self._strategy = strategy
        if seed is not None:
            self.env.eval(f"(seed {int(seed)})")
        tracing = self.trace_facts
        if tracing:
            self._watch_facts(False)
        self.evaluations += 1
        pieces = self.out.pieces
        guard = self.out.guard
        if guard is not None:
            guard.tripped = None
        failed: FactAssertError | None = None
        if timeout is not None:  # interrupts a right-hand side, test or initialiser that never returns
            WATCHDOG.arm(e, t0 + timeout)
        try:
            fired, stop = self._reset_assert_run(facts, max_firings, timeout, t0, run_chunk)
        except FactAssertError as exc:
            fired, stop, failed = 0, None, exc
        finally:
            halted = timeout is not None and WATCHDOG.disarm(e)
        deep = guard is not None and guard.tripped is not None
        if deep:
            clear_halt(e)
            stop = None
        elif halted:
            stop = "timeout"
        elif failed is not None:
            raise failed
        if tracing:
            self._watch_facts(False)
        output, firings, events = split_trace(pieces, guard is not None)
        pieces.clear()
        if self.msg.pieces:
            messages = "".join(p for _, p in self.msg.pieces)
            errors = "".join(p for n, p in self.msg.pieces if n == "stderr")
            self.msg.pieces.clear()
        else:
            messages = errors = ""
        result = ForwardResult(self.memory.facts(templates), firings, events, output, messages, strategy.label, 0.0, "clips")
        result.seconds = time.perf_counter() - t0
        if stop is not None:
            last = [f.rule for f in firings[-10:]]
            if stop == "firings":
                raise FiringLimitError(
                    f"runaway knowledge base: stopped after {fired} firings (limit {max_firings}) with activations "
                    f"still on the agenda; last rules fired: {', '.join(last) or '(none)'}",
                    result,
                    last,
                )
            raise EvaluationTimeout(
                f"runaway knowledge base: stopped after {result.seconds:.3f} s (time limit {timeout} s) and "
                f"{fired} firings; last rules fired: {', '.join(last) or '(none)'}",
                result,
                last,
            )
        if deep:
            last = firings[-1].rule if firings else "(no rule fired)"
            raise RuleExecutionError(f"rule execution stopped after {len(firings)} firings (last rule: {last}): "
                                     f"{depth_message(guard)}", result)
        if errors:
            last = firings[-1].rule if firings else "(no rule fired)"
            raise RuleExecutionError(f"rule execution failed after {len(firings)} firings (last rule: {last}): {' '.join(errors.split())}", result)
        return result

    def _reset_assert_run(self, facts: Sequence[Fact], max_firings: int | None, timeout: float | None, t0: float,
                          run_chunk: int) -> tuple[int, str | None]:
        """Reset, assert `facts`, run under the limits; returns (rules fired, "firings" | "timeout" | None)."""
        e = self._e
        lib.Reset(e)
        if self.msg.pieces:
            self.msg.pieces.clear()
        self.memory.assert_all(facts)
        if self.trace_facts:
            if self.memory.new_templates:  # an input fact of a relation no rule mentions
                self._templates = self._template_ptrs()
                self.memory.new_templates = False
            self._watch_facts(True)
        self.out.pieces.clear()

        fired = 0
        stop: str | None = None
        if max_firings is None and timeout is None:
            fired = lib.Run(e, -1)
        else:
            deadline = None if timeout is None else t0 + timeout
            while True:
                budget = run_chunk if max_firings is None else min(run_chunk, max_firings - fired)
                if budget <= 0:
                    if self._agenda_pending():
                        stop = "firings"
                    break
                n = lib.Run(e, budget)
                fired += n
                if n < budget:
                    break
                if deadline is not None and time.perf_counter() > deadline and self._agenda_pending():
                    stop = "timeout"
                    break
        return fired, stop

    def _agenda_pending(self) -> bool:
        """True when some module on the focus stack still has an activation."""
        e = self._e
        if lib.GetFocus(e) == ffi.NULL:
            return False
        current = lib.GetCurrentModule(e)
        try:
            for name in self.env.eval("(get-focus-stack)"):
                mod = lib.FindDefmodule(e, str(name).encode())
                if mod == ffi.NULL:
                    continue
                lib.SetCurrentModule(e, mod)
                if lib.GetNextActivation(e, ffi.NULL) != ffi.NULL:
                    return True
            return False
        finally:
            lib.SetCurrentModule(e, current)

    def rule_names(self) -> list[str]:
        return [r.name for r in self.env.rules()]

    def memory_in_use(self) -> int:
        """Bytes CLIPS has allocated in this environment (`(mem-used)`)."""
        return int(self.env.eval("(mem-used)"))

    def close(self) -> None:
        self.memory.close()

