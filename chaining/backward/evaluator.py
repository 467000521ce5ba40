"""Expression evaluation and base facts through real CLIPS (clipspy).

CLIPS is the evaluator: a `test`, a predicate (`:`) or return-value (`=`) constraint, or a
computed slot value is turned back into CLIPS text with the bound variables replaced by
constants and given to `Environment.eval`. The environment holds the knowledge base's
templates, deffacts, deffunctions, defglobals and COOL/generic constructs, never its rules,
so nothing fires. The knowledge base was validated (`rules`), so no OS-reaching function is
reachable from its text; values substituted in are quoted constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from rules import KnowledgeBase, ast
from rules.facts import IMPLIED, Fact, String, Symbol
from rules.printer import expr_text

from .errors import EvaluationError, ProofCancelled, ProofTimeout

if TYPE_CHECKING:
    import clips

from .terms import Bindings, Value, clips_text, from_clips, make_fact, vkey


class ClipsEvaluator:
    """One CLIPS environment per prover session (not thread-safe; one session per thread), built on
    first use: a proof that evaluates nothing (no `test`, `:` or `=` constraint, no computed value)
    over plain facts (`plain_base_facts`) never starts CLIPS."""

    def __init__(self, kb: KnowledgeBase, functions: Mapping[str, Callable] | None = None):
        self.kb = kb
        self.functions = functions
        self.deadline: float | None = None  # `time.perf_counter()` limit of the current proof, set by the prover
        self.cancel: Any = None  # the current proof's `Cancellation`, set by the prover
        self.calls = 0
        self._env: clips.Environment | None = None
        self._key: int | None = None  # the environment's address: the watchdog's key for it

    @property
    def env(self) -> clips.Environment:
        """The CLIPS environment (templates, deffacts, functions, globals; never the rules).

        Raises:
            EvaluationError: CLIPS rejected a construct, or a recursive one passed the call-depth limit.
        """
        if self._env is None:
            self._build()
        return self._env  # type: ignore[return-value]

    def _build(self) -> None:
        # CLIPS (clipspy, cffi) and the forward engine's helpers load only now: a proof over plain
        # facts that evaluates nothing never pays for them.
        import clips
        from clips._clips import ffi

        from chaining.forward.clips_memory import WorkingMemory
        from chaining.forward.clips_recursion import (
            DEFAULT_MAX_CALL_DEPTH,
            CallDepthGuard,
            recursive_functions,
            watch_if_recursive,
        )
        from chaining.forward.clips_trace import MessageRouter, OutputRouter

        kb, functions = self.kb, self.functions
        self._env = clips.Environment()
        self._key = int(ffi.cast("uintptr_t", self._env._env))
        # What CLIPS prints goes to a buffer (cleared after each call), never to the process's stdout;
        # recursive functions are traced there so endless recursion is halted, not a SIGSEGV.
        self._out = OutputRouter("workbench-prover-stdout")
        self.env.add_router(self._out)
        # CLIPS's error text reaches clipspy's error router (priority 40: CLIPSError carries it, and our
        # errors word it with the fact's path), which passes it on to the routers below it: this one
        # takes it there, so CLIPS's terminal router never prints the raw `[CSTRNCHK1] ...` on stderr.
        self._messages = MessageRouter("workbench-prover-messages", priority=30)
        self.env.add_router(self._messages)
        recursive = recursive_functions([(str(f), str(t)) for f, t in kb.sources])
        if recursive:
            self._out.guard = CallDepthGuard(DEFAULT_MAX_CALL_DEPTH)
        for name, fn in (functions or {}).items():
            self.env.define_function(fn, name)
        for c in kb.constructs:
            if isinstance(c, ast.RuleDef):
                continue
            try:
                self.env.build(c.text)
            except clips.CLIPSError as exc:
                self._check_depth(f"{type(c).__name__} at line {c.pos.line}")
                raise EvaluationError(f"CLIPS rejected {type(c).__name__} at line {c.pos.line}: {exc}") from None
            self._check_depth(f"{type(c).__name__} at line {c.pos.line}")
            watch_if_recursive(self.env._env, c.text, recursive)
        self.memory = WorkingMemory(self.env)  # reads facts by pointer (any module), retains none

    def _check_depth(self, where: str) -> None:
        from chaining.forward.clips_halt import clear as clear_halt
        from chaining.forward.clips_recursion import depth_message

        self._out.pieces.clear()
        self._messages.pieces.clear()
        guard = self._out.guard
        if guard is not None and guard.tripped is not None:
            message = depth_message(guard)
            guard.tripped = None
            clear_halt(self.env._env)
            raise EvaluationError(f"{where}: {message}")

    # -- facts
    def plain_base_facts(self) -> list[tuple[Fact, str]] | None:
        """The deffacts facts read from the rule text without CLIPS, as `base_facts` gives them (ids
        1, 2, ... in order, a duplicate fact kept once), when the knowledge base holds nothing but
        rules, deffunctions and deffacts of ordered facts of constants; else None (CLIPS must read
        them: templates fill defaults, globals and modules change what a fact is)."""
        from rules.scan import FactData, atom

        facts: list[FactData] = []
        for c in self.kb.constructs:
            if isinstance(c, (ast.RuleDef, ast.FunctionDef)):
                continue
            if not isinstance(c, ast.FactsDef) or not isinstance(c.facts, FactData) or not c.facts.flat:
                return None
            facts.append(c.facts)
        if self.kb.templates or any("::" in str(c.name) for c in self.kb.constructs if hasattr(c, "name")):
            return None
        out: list[tuple[Fact, str]] = []
        seen: set[tuple] = set()
        pos = ast.Pos(0, 0)
        for data in facts:
            for rel, _, slots in data.template_facts():
                if any(name for name, *_ in slots):
                    return None  # a slot: not an ordered fact after all
                values: list[Value] = []
                for _slot, _, v0, v1 in slots:
                    for token, _ in data.values(v0, v1):
                        a = atom(token, pos)
                        values.append(
                            Symbol(a.value)
                            if a.kind == "symbol"
                            else String(a.value)
                            if a.kind == "string"
                            else a.value
                        )
                key = (rel, tuple(vkey(v) for v in values))
                if key in seen:
                    continue
                seen.add(key)
                out.append((make_fact(rel, {IMPLIED: tuple(values)}, len(out) + 1), "deffacts"))  # constants: no checks
        return out

    def base_facts(self, facts: Iterable[Fact], include_deffacts: bool = True) -> list[tuple[Fact, str]]:
        """Reset (deffacts) and assert the given working-memory facts; return (fact with id, source).

        source is "deffacts" or "working-memory". Template defaults are CLIPS's own.
        `include_deffacts=False` empties working memory after the reset, so that the given facts
        are the whole working memory (e.g. a forward run's final facts, deffacts included: with
        the deffacts still there CLIPS would drop those given facts as duplicates).

        Raises:
            EvaluationError: a given fact does not fit its template (message names the fact).
        """
        import clips

        self.env.reset()
        self._check_depth("reset (deffacts, defglobals)")
        if not include_deffacts:
            self.env.eval("(retract *)")
        n_deffacts = len(self.memory.fact_ids())
        for i, f in enumerate(facts):
            self._check_fits(f, f"facts[{i}]")
            try:
                self._in_template_module(f, partial(self.env.assert_string, _assert_text(f)))
            except clips.CLIPSError as exc:
                raise EvaluationError(self._located_failure(f, f"facts[{i}]", exc)) from None
        self._out.pieces.clear()
        self._messages.pieces.clear()
        return [(f, "deffacts" if i < n_deffacts else "working-memory") for i, f in enumerate(self.memory.facts())]

    def _located_failure(self, f: Fact, where: str, exc: Exception) -> str:
        """For a given fact CLIPS refused: the fact builder's located message (`facts[0].slots.value: the
        symbol maybe is not allowed: slot value of feature allows only yes no`), as `kb run` words it."""
        from chaining.forward.errors import FactAssertError

        try:
            self._in_template_module(f, lambda: self.memory.assert_fact(f, where))
        except FactAssertError as located:
            return str(located)
        return f"{where}: cannot assert {_assert_text(f)}: {exc}"

    def _in_template_module(self, f: Fact, do: Callable[[], object]) -> None:
        """Run `do` (an assert of `f`) with the module that defines its template current: a template of
        a module that MAIN does not import cannot be named from MAIN. Ordered facts of a relation no
        module defines are asserted in MAIN."""
        from clips._clips import lib

        env = self.env._env
        defined = self.memory.templates_named(f.template.rsplit("::", 1)[-1])
        current = lib.GetCurrentModule(env)
        if defined:
            lib.SetCurrentModule(env, lib.FindDefmodule(env, lib.DeftemplateModule(defined[0].ptr)))
        try:
            do()
        finally:
            lib.SetCurrentModule(env, current)

    def _check_fits(self, f: Fact, where: str) -> None:
        """Refuse a fact whose template or slots the knowledge base lacks, as `kb run` does (else CLIPS
        reads `(t (s 1))` for an unknown template t as an ordered fact holding a function call)."""
        t = self.kb.templates.get(f.template.rsplit("::", 1)[-1])
        if f.is_ordered:
            if t is not None:
                raise EvaluationError(
                    f"{where}: {f.template!r} is a deftemplate with slots {list(t.slots)}; give 'slots', not 'values'"
                )
            return
        if t is None:
            raise EvaluationError(f"{where}: template {f.template!r} is not defined in this knowledge base")
        for name in f.slots:
            if name not in t.slots:
                raise EvaluationError(
                    f"{where}.slots.{name}: template {f.template!r} has no slot {name!r}; slots are {list(t.slots)}"
                )

    def complete_template_fact(self, template: str, slots: dict[str, Value]) -> dict[str, Value]:
        """Fill missing slots of a template fact with CLIPS's defaults (static, derived or dynamic)."""
        t = self.kb.templates.get(template)
        if t is None:
            return slots
        out = {}
        for name in t.slots:
            if name in slots:
                out[name] = slots[name]
            else:
                out[name] = self.eval_text(f"(deftemplate-slot-default-value {template} {name})")
        return out

    # -- expressions
    def eval(self, e: ast.Expr, b: Bindings) -> Value:
        """Value of an expression under bindings.

        Raises:
            EvaluationError: an unbound variable, or CLIPS reports an error (message has the text).
        """
        if isinstance(e, ast.Atom):
            if e.kind in ("variable", "mf_variable"):
                name = str(e.value)
                if name not in b:
                    raise EvaluationError(f"variable ?{name} is not bound")
                return b[name]
            if e.kind == "symbol":
                return Symbol(str(e.value))
            if e.kind == "string":
                return String(str(e.value))
            if e.kind in ("integer", "float"):
                return e.value
        return self.eval_text(substitute(e, b))

    def truth(self, e: ast.Expr, b: Bindings) -> bool:
        """CLIPS truth: anything but the symbol FALSE is true."""
        v = self.eval(e, b)
        return not (isinstance(v, str) and not isinstance(v, String) and v == "FALSE")

    def eval_text(self, text: str) -> Value:
        """Evaluate CLIPS text; a run past `self.deadline` is halted (ProofTimeout), as is endless recursion,
        and one whose proof is cancelled (`self.cancel`, ProofCancelled).

        Raises:
            EvaluationError: CLIPS reports an error, or recursion passed the call-depth limit.
            ProofTimeout: the expression was still running at the proof's deadline.
            ProofCancelled: the proof's caller cancelled it before or while the expression ran.
        """
        import clips

        from chaining.forward.clips_halt import WATCHDOG

        self.calls += 1
        env = self.env._env
        cancel = self.cancel
        armed = self.deadline is not None or cancel is not None
        if armed:
            WATCHDOG.arm(env, math.inf if self.deadline is None else self.deadline, self._key)
            if cancel is not None and cancel.cancelled:  # cancelled before it was armed: `halt` found nothing
                WATCHDOG.stop(self._key)  # type: ignore[arg-type]
        failure: clips.CLIPSError | None = None
        try:
            value = self.env.eval(text)
        except clips.CLIPSError as exc:
            failure = exc
        finally:
            halted = WATCHDOG.disarm(env, self._key) if armed else ""
        self._check_depth(f"evaluating {text}")
        if halted == "cancelled":
            raise ProofCancelled(f"proof cancelled by its caller while CLIPS evaluated {text}")
        if halted:
            raise ProofTimeout(f"proof ran past its time limit while CLIPS evaluated {text}", text)
        if failure is not None:
            raise EvaluationError(f"CLIPS could not evaluate {text}: {failure}") from None
        return from_clips(value)

    def halt(self) -> None:
        """Halt the CLIPS evaluation running now, from any thread (nothing when none runs): how a cancelled
        proof stops inside an expression that runs long (`Cancellation.bind`)."""
        from chaining.forward.clips_halt import WATCHDOG

        if self._key is not None:
            WATCHDOG.stop(self._key)


def substitute(e: ast.Expr, b: Bindings) -> str:
    """CLIPS text of `e` with bound variables replaced by constants.

    Raises:
        EvaluationError: a variable is not bound.
    """
    if isinstance(e, ast.Atom):
        if e.kind in ("variable", "mf_variable"):
            name = str(e.value)
            if name not in b:
                raise EvaluationError(f"variable ?{name} is not bound when evaluating")
            return clips_text(b[name])
        return expr_text(e)
    return "(" + " ".join(substitute(i, b) for i in e.items) + ")"


def convert_fact(cf) -> Fact:
    """A clipspy fact as `rules.facts.Fact` (id = CLIPS fact index)."""
    name = cf.template.name.rsplit("::", 1)[-1]
    if cf.template.implied:
        return Fact(name, {IMPLIED: tuple(from_clips(v) for v in cf)}, cf.index)
    return Fact(name, {k: from_clips(v) for k, v in dict(cf).items()}, cf.index)


def _assert_text(f: Fact) -> str:
    if f.is_ordered:
        return (
            "("
            + " ".join(
                [
                    f.template,
                    *(
                        clips_text(v) if not isinstance(v, tuple) else " ".join(clips_text(x) for x in v)
                        for v in f.values
                    ),
                ]
            )
            + ")"
        )
    parts = []
    for k, v in f.slots.items():
        if isinstance(v, tuple):
            parts.append(f"({k}" + "".join(" " + clips_text(x) for x in v) + ")")
        else:
            parts.append(f"({k} {clips_text(v)})")
    return f"({f.template} {' '.join(parts)})"
