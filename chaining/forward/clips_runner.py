"""One CLIPS environment holding a compiled knowledge base, evaluated again and again.

Not thread-safe by itself: `ForwardEngine` (clips_engine.py) hands each runner to one thread
at a time. An evaluation is: strategy -> reset -> assert input facts -> run (in chunks when a
firing or time limit applies) -> read working memory and the trace.

Where the trace and the output come from (see `clips_native` for why):
    firings      CLIPS's before-rule-fires callback, which has CLIPS write the activation
                 (`<salience> <rule>: f-1,*,f-3`) into a string builder; the lines are parsed
                 after the run (`clips_recorder`: the callbacks are C functions when
                 `native_trace.c` is built, else Python functions);
    fact events  CLIPS's assert and retract callbacks during the run (a `modify` calls both),
                 only with `trace_facts`;
    output       what the program prints to `stdout` (`OutputRouter`, below CLIPS's routers);
    messages     `stderr` and `stdwrn` (`MessageRouter`).
No `(watch ...)` output is parsed, so nothing a program prints can be mistaken for a trace line.
CLIPS's terminal router ("fileio") is off in these environments: `stdin` (read, readline,
read-number, get-char) reaches `clips_console`'s router, which reads the runner's `Console`
(`workbench kb run`) or, without one, fails the read with a clear CLIPS error instead of
blocking a server on the terminal. Every evaluation starts from the environment as it was
after loading (`clips_reset`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import clips
from clips._clips import ffi, lib

from rules.facts import Fact

from . import clips_native
from .cancellation import Cancellation
from .clips_console import Console, ConsoleRouter
from .clips_functions import wrap_function
from .clips_halt import WATCHDOG
from .clips_halt import clear as clear_halt
from .clips_memory import WorkingMemory
from .clips_recorder import new_recorder
from .clips_recursion import (
    DEFAULT_MAX_CALL_DEPTH,
    CallDepthGuard,
    depth_message,
    recursive_functions,
    watch_if_recursive,
)
from .clips_reset import EnvironmentState
from .clips_trace import MessageRouter, OutputRouter, printable, program_output
from .clips_versions import VersionRecorder
from .constructs import ConstructSyntaxError, split_constructs
from .errors import (
    EvaluationCancelled,
    EvaluationTimeout,
    FactAssertError,
    FiringLimitError,
    KnowledgeBaseLoadError,
    MemoryLimitError,
    RuleExecutionError,
)
from .result import ForwardResult
from .strategy import Strategy

_CLIPSPY_ERROR_ROUTER = b"python-error-router"
#: Firings (and their fact events) a run stopped by its time limit keeps in its partial result: the last ones.
TIMEOUT_TRACE_KEEP = 10_000


class ClipsRunner:
    """A CLIPS environment with the knowledge base built into it.

    Args:
        sources: `(file name, text)` pairs, already validated (never unvalidated text: a
            `defglobal` initialiser runs code while it is built).
        functions: Python functions callable from rules by name, e.g. `{"score": fn}`.
        trace_firings: record the firings of the run (`ForwardResult.firings`); False: none.
        trace_facts: record the asserts/retracts of the run (`ForwardResult.events`); the
            firing that made each is counted even without `trace_firings`.
        build_timeout: seconds loading all constructs may take, separate from any evaluation's
            time limit (a `defglobal` initialiser runs code; checked between constructs and
            inside expressions, not inside CLIPS's reader of one construct); None: no limit.
        console: where `stdin` reads from and program output goes live (`clips_console`);
            None: a program that reads the console fails with a clear error.
        memory_limit: bytes CLIPS may hold during an evaluation (`MemUsed`); past it the
            evaluation is halted (`MemoryLimitError`); None: no limit.
        build_memory_limit: the same while loading (with `build_timeout` only); None: no limit.
        max_call_depth: deepest nesting of calls to recursive deffunctions/generics (`clips_recursion`).
        trace_versions: record each fact version a retract or `modify` ends (`ForwardResult.versions`,
            `clips_versions`) in every evaluation (one Python call per retract, for explanations only);
            False: only in those that ask (`evaluate(trace_versions=True)`).
        native: record the trace with the C callbacks (`native_trace.c`, `clips_recorder`) and
            assert facts with the C loop (`native_facts.c`); None: each when built, False: Python.

    Raises:
        KnowledgeBaseLoadError: CLIPS refused a construct, or building it ran past `build_timeout`
            or `build_memory_limit` (`file:line:col: ...`; `.halted` tells the last two apart).
        RuntimeError: `native` is True and a C part is not built.
    """

    def __init__(
        self,
        sources: Sequence[tuple[str, str]],
        functions: Mapping[str, Callable] | None = None,
        *,
        trace_firings: bool = True,
        trace_facts: bool = True,
        trace_versions: bool = False,
        build_timeout: float | None = None,
        max_call_depth: int = DEFAULT_MAX_CALL_DEPTH,
        native: bool | None = None,
        console: Console | None = None,
        memory_limit: int | None = None,
        build_memory_limit: int | None = None,
    ):
        self.env = clips.Environment()
        self._e = self.env._env
        self._ep = clips_native.env_pointer(self._e)
        self._key = int(ffi.cast("uintptr_t", self._e))  # the watchdog's key for this environment
        self._halt = partial(WATCHDOG.stop, self._key)  # a `Cancellation`'s stop for this environment (made once)
        self.trace_firings = trace_firings
        self.trace_facts = trace_facts
        self._strategy: Strategy | None = None
        self._strategy_label = ""
        for name, fn in (functions or {}).items():
            self.env.define_function(wrap_function(fn), name)
        # Python routers below CLIPS's string routers; clipspy's error router and CLIPS's terminal
        # router off (`clips_native`: CLIPS then reaches Python only for what a program prints).
        for name in (_CLIPSPY_ERROR_ROUTER, b"fileio"):
            clips_native.lib.DeactivateRouter(self._ep, name)
        self.out = OutputRouter(priority=-1)
        self.msg = MessageRouter(priority=-2)  # below `out`: a printed piece costs one query, not two
        self.env.add_router(self.out)
        self.env.add_router(self.msg)
        self.console = console
        self.memory_limit = memory_limit
        self.build_memory_limit = build_memory_limit
        self._streamed: list[str] = []  # output already written to the console in this evaluation
        self.console_router = ConsoleRouter(self.env, console, self._flush_console, self._key)
        self._recursive = recursive_functions(sources)
        if self._recursive:  # without a limit, endless recursion overflows the C stack (SIGSEGV)
            self.out.guard = CallDepthGuard(max_call_depth)
        self.recorder = new_recorder(self.env, self._ep, trace_firings, trace_facts, native)
        # looked up once: attribute access on cffi's ABI-mode library costs per call
        self._get_halt, self._get_error = clips_native.lib.GetHaltExecution, clips_native.lib.GetEvaluationError
        self.load_messages = []
        self._build(sources, build_timeout)
        self.state = EnvironmentState(self._e, (text for _, text in sources))
        self.memory = WorkingMemory(self.env, native=native)
        recorder = self.recorder  # the callback holds it and the memory, never the runner
        self.trace_versions = trace_versions
        self.versions = VersionRecorder(self.env, self._ep, self.memory.read_one, lambda: recorder.fired)
        self.evaluations = 0

    def _take_messages(self) -> tuple[str, str]:
        """(all warnings and errors, errors only) printed since the last call."""
        pieces = self.msg.pieces
        if not pieces:
            return "", ""
        messages = "".join(p for _, p in pieces)
        errors = "".join(p for n, p in pieces if n == "stderr")
        pieces.clear()
        return messages, errors

    #: What loading reported about constructs CLIPS skipped (`file:line:col: ...`), e.g. a
    #: deffunction named like a built-in function, which CLIPS refuses to replace.
    load_messages: list[str]

    def _flush_console(self) -> None:
        """Write the program's pending output to the console (before it waits for input)."""
        console, pieces = self.console, self.out.pieces
        if console is None or console.output is None or not pieces:
            return
        text = program_output(pieces) if self.out.guard is not None else "".join(pieces)
        pieces.clear()
        self._streamed.append(printable(text))
        console.write(text)

    def _build(self, sources: Sequence[tuple[str, str]], timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.perf_counter() + timeout
        for file, text in sources:
            try:
                constructs = split_constructs(text, file)
            except ConstructSyntaxError as exc:
                raise KnowledgeBaseLoadError(str(exc)) from None
            for c in constructs:
                self._take_messages()
                builtin = _redefined_builtin(self._ep, c)
                if deadline is not None:
                    if time.perf_counter() > deadline:
                        why = f"took longer than its time limit of {timeout} s (reached before this {c.kind})"
                        raise _load_error(c, f"loading the knowledge base {why}", "timeout")
                    WATCHDOG.arm(self._e, deadline, self._key, self.build_memory_limit)
                try:
                    ret = lib.Build(self._e, c.text.encode())
                finally:
                    halted = WATCHDOG.disarm(self._e) if deadline is not None else ""
                    if halted:
                        why = (
                            f"held more than its memory limit of {self.build_memory_limit} bytes, in this {c.kind}"
                            if halted == "memory"
                            else f"took longer than its time limit of {timeout} s, in this {c.kind} "
                            "(an expression that never returns?)"
                        )
                        raise _load_error(c, f"loading the knowledge base {why}", halted)
                guard = self.out.guard
                if guard is not None:
                    if guard.tripped is not None:
                        clear_halt(self._e)
                        raise _load_error(c, f"building this {c.kind}: {depth_message(guard)}")
                    if ret == lib.BE_NO_ERROR:
                        watch_if_recursive(self._e, c.text, self._recursive)
                if ret != lib.BE_NO_ERROR:
                    detail = " ".join(self._take_messages()[0].split()) or f"CLIPS build error {ret}"
                    if builtin is not None:  # CLIPS's load reports it, skips it and loads the rest
                        self.load_messages.append(
                            f"{c.file}:{c.line}:{c.column}: CLIPS skipped this deffunction: "
                            + detail.split(" ERROR:")[0]
                        )
                        continue
                    raise _load_error(c, f"CLIPS refused this {c.kind}: {detail}")
        self._take_messages()
        self.out.pieces.clear()

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
        cancel: Cancellation | None = None,
        trace_versions: bool = False,
    ) -> ForwardResult:
        """See `ForwardChainer.evaluate`; `facts` are already `Fact` objects; `cancel` stops the run from
        another thread (EvaluationCancelled); `trace_versions` records this run's fact versions
        (`ForwardResult.versions`) even when the runner does not record them for every run."""
        t0 = time.perf_counter()
        e = self._e
        if cancel is not None and cancel.cancelled:
            raise EvaluationCancelled("evaluation cancelled before it started", None, 0)
        self.state.restore()
        if strategy is not self._strategy or lib.GetStrategy(e) != int(strategy):  # a rule may have set another
            lib.SetStrategy(e, int(strategy))
            self._strategy, self._strategy_label = strategy, strategy.label
        if seed is not None:
            self.env.eval(f"(seed {int(seed)})")
        self.evaluations += 1
        recorder = self.recorder
        versions = self.versions if trace_versions or self.trace_versions else None
        guard = self.out.guard
        if guard is not None:
            guard.tripped = None
        failed: FactAssertError | None = None
        watched = timeout is not None or self.memory_limit is not None or cancel is not None
        if watched:  # interrupts a right-hand side, test or initialiser that never returns, or a memory hog
            WATCHDOG.arm(e, math.inf if timeout is None else t0 + timeout, self._key, self.memory_limit)
            if cancel is not None:
                cancel.bind(self._halt)
        failed_rhs = False
        self._streamed.clear()
        try:
            fired, stop = self._reset_assert_run(facts, max_firings, timeout, t0, run_chunk, versions)
            # CLIPS halts execution when an action or a pattern's expression fails; a program
            # that merely prints to `stderr` (or to an unknown logical name) runs on, as in CLIPS.
            failed_rhs = bool(self._get_halt(self._ep)) or bool(self._get_error(self._ep))
        except FactAssertError as exc:
            fired, stop, failed = 0, None, exc
        finally:
            recorder.stop()
            if versions is not None:
                versions.stop()
            if cancel is not None:
                cancel.unbind()  # before disarm: a late cancel() never halts this environment's next run
            halted = WATCHDOG.disarm(e, self._key) if watched else ""
        exc = recorder.take_error()
        if exc is not None:
            raise RuntimeError(f"recording the trace failed during the run: {exc!r}") from exc
        deep = guard is not None and guard.tripped is not None
        if deep:
            clear_halt(e)
            stop = None
        elif halted:
            stop = halted  # "timeout", "memory" or "cancelled"
        elif failed is not None:
            raise failed
        pieces = self.out.pieces
        if pieces:
            output = program_output(pieces) if guard is not None else "".join(pieces)
            pieces.clear()
        else:
            output = ""
        if self.console is not None:
            self.console.write(output)  # the bytes the program printed, as CLIPS writes them
        output = printable(output)
        if self.console is not None:
            if self._streamed:
                output = "".join(self._streamed) + output
                self._streamed.clear()
        messages, errors = self._take_messages()
        # A run stopped by its time limit keeps the end of its trace only: turning a runaway's
        # whole trace into Python values could take longer than the limit itself.
        skip = max(0, recorder.fired - TIMEOUT_TRACE_KEEP) if stop in ("timeout", "memory", "cancelled") else 0
        result = ForwardResult(
            self.memory.facts(templates),
            recorder.take_firings(skip) if self.trace_firings else [],
            recorder.take_events(skip),
            output,
            messages,
            self._strategy_label,
            0.0,
            "clips",
        )
        if versions is not None:
            result.versions = versions.take(skip)
        result.seconds = time.perf_counter() - t0
        if stop is not None:
            firings = result.firings
            last = [f.rule for f in firings[-10:]]
            named = ", ".join(last) or ("(none)" if self.trace_firings else "(not traced: trace_firings is off)")
            if stop == "firings":
                raise FiringLimitError(
                    f"runaway knowledge base: stopped after {fired} firings (limit {max_firings}) with activations "
                    f"still on the agenda; last rules fired: {named}",
                    result,
                    last,
                )
            if stop == "cancelled":
                raise EvaluationCancelled(
                    f"evaluation cancelled by its caller after {result.seconds:.3f} s and {fired} firings; "
                    f"last rules fired: {named}",
                    result,
                    fired,
                )
            if stop == "memory":
                raise MemoryLimitError(
                    f"runaway knowledge base: stopped after {result.seconds:.3f} s and {fired} firings: CLIPS held "
                    f"more than the memory limit of {self.memory_limit} bytes; last rules fired: "
                    f"{named}",
                    result,
                    last,
                )
            raise EvaluationTimeout(
                f"runaway knowledge base: stopped after {result.seconds:.3f} s (time limit {timeout} s) and "
                f"{fired} firings; last rules fired: {named}"
                + (f" (the partial result keeps the trace of the last {TIMEOUT_TRACE_KEEP} firings)" if skip else ""),
                result,
                last,
            )
        firings = result.firings
        if deep:
            last = firings[-1].rule if firings else "(no rule fired)"
            raise RuleExecutionError(
                f"rule execution stopped after {len(firings)} firings (last rule: {last}): {depth_message(guard)}",
                result,
            )
        if failed_rhs:
            clear_halt(e)  # leave the environment ready for the next evaluation
            last = firings[-1].rule if firings else "(no rule fired)"
            detail = " ".join(errors.split()) or "CLIPS halted execution"
            raise RuleExecutionError(
                f"rule execution failed after {len(firings)} firings (last rule: {last}): {detail}", result
            )
        return result

    def _reset_assert_run(
        self,
        facts: Sequence[Fact],
        max_firings: int | None,
        timeout: float | None,
        t0: float,
        run_chunk: int,
        versions: VersionRecorder | None,
    ) -> tuple[int, str | None]:
        """Reset, assert `facts`, run under the limits (recording fact versions with `versions`); returns
        (rules fired, "firings" | "timeout" | None)."""
        e = self._e
        lib.Reset(e)
        self.memory.assert_all(facts)
        # What reset and the input asserts printed is not the run's output (as before a `run`).
        if self.msg.pieces:
            self.msg.pieces.clear()
        self.out.pieces.clear()
        self.recorder.start()
        if versions is not None:
            versions.start()

        fired = 0
        stop: str | None = None
        if max_firings is None and timeout is None:
            fired = lib.Run(e, -1)
        else:
            deadline = None if timeout is None else t0 + timeout
            waited0 = 0.0 if self.console is None else self.console.waited
            while True:
                budget = run_chunk if max_firings is None else min(run_chunk, max_firings - fired)
                if budget <= 0:
                    if max_firings and self._agenda_pending():  # 0 fires nothing by request: not a runaway
                        stop = "firings"
                    break
                n = lib.Run(e, budget)
                fired += n
                if n < budget:
                    break
                if (
                    deadline is not None
                    and time.perf_counter() - self._waited(waited0) > deadline
                    and self._agenda_pending()
                ):
                    stop = "timeout"
                    break
        return fired, stop

    def _waited(self, since: float) -> float:
        """Seconds this evaluation has waited for console input (not counted against its time limit)."""
        return 0.0 if self.console is None else self.console.waited - since

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
        """Remove the callbacks and free the string builders (idempotent); the environment is
        destroyed with `self.env`."""
        self.recorder.close()
        self.versions.close()
        self.memory.close()
        self.console_router.close()


def _load_error(c: Any, reason: str, halted: str = "") -> KnowledgeBaseLoadError:
    """The error for construct `c` (a `constructs.Construct`), located at its start."""
    where = f"{c.file}:{c.line}:{c.column}"
    return KnowledgeBaseLoadError(
        f"{where}: {reason}", file=c.file, line=c.line, column=c.column, reason=reason, halted=halted
    )


def _redefined_builtin(ep: Any, construct: Any) -> str | None:
    """The name of a deffunction that would replace a function CLIPS defines (`atan2`), else None."""
    if construct.kind != "deffunction":
        return None
    parts = construct.text[1:].split(None, 2)
    if len(parts) < 2:
        return None
    name = parts[1].rstrip("()")
    return name if clips_native.lib.FindFunction(ep, name.encode()) != clips_native.abi.NULL else None
