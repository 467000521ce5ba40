"""`ExpertaEngine`: forward chaining with rules written in Python (an experta `KnowledgeEngine`).

Same interface and result shape as the CLIPS backend. Facts map by template name to experta
`Fact` subclasses (`fact_types`, by default every `Fact` subclass defined in the engine class's
module, keyed by class name): template facts become keyword fields, ordered facts positional
fields. experta's own `InitialFact` is left out of the reported working memory (CLIPS 6.4 has
no initial fact).

Tracing reads experta's own records: each firing is the activation experta's agenda returned
(rule function name and the `__factid__` of its facts), and the facts a firing asserted and
retracted are experta's fact-list change lists right after the firing (retracts are listed
before asserts within one firing, as a `modify` does them).

Limits: building the `KnowledgeEngine` (experta compiles its Rete network then) runs under
`EngineConfig.load_timeout`, each evaluation (reset, declaring the facts, the run) under
`timeout`; both interrupt experta inside one long call (`deadline`), so a matcher explosion
stops within milliseconds of its limit. An interrupted engine is dropped and built again for
the next evaluation.

CLIPS semantics kept (experta differs): `modify` or `retract` of a fact handle that an earlier
`modify` in the run replaced acts on the replacement (CLIPS keeps a modified fact's address
valid, so a rule may modify the same fact twice); `None` is a valid slot value (experta rules
test for it with `L(None)`).

Only the depth strategy exists in experta 1.9.4; other names raise ValueError. Printed text is
captured by redirecting `sys.stdout`, which is process-wide, so evaluations of all experta
engines are serialised by one lock.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import time
import types
from collections.abc import Iterable, Mapping
from typing import Any

import experta
from experta.fact import InitialFact

from rules.facts import IMPLIED, Fact

from .base import EngineConfig, FactsInput, ForwardChainer, as_facts, firing_limit
from .deadline import DeadlineExceeded, call_with_deadline
from .errors import (
    EvaluationTimeout,
    FactAssertError,
    FiringLimitError,
    KnowledgeBaseLoadError,
    RuleExecutionError,
)
from .result import FactEvent, Firing, ForwardResult
from .strategy import Strategy

_STDOUT_LOCK = threading.Lock()


class ExpertaEngine(ForwardChainer):
    """Runs `engine_class` (a `experta.KnowledgeEngine` subclass) behind the forward-chaining interface.

    Args:
        engine_class: the rules, as a KnowledgeEngine subclass.
        fact_types: template name -> experta `Fact` subclass; default: the `Fact` subclasses
            of `engine_class`'s module, by class name.
        config: limits (`max_firings`, `timeout`, `load_timeout`); `trace_facts` and `workers`
            are ignored.

    Raises:
        TypeError: `engine_class` is not a KnowledgeEngine subclass.
        KnowledgeBaseLoadError: building the engine ran past `config.load_timeout`.
    """

    backend = "experta"

    def __init__(
        self,
        engine_class: type,
        *,
        fact_types: Mapping[str, type] | Iterable[type] | None = None,
        config: EngineConfig | None = None,
    ):
        if not (isinstance(engine_class, type) and issubclass(engine_class, experta.KnowledgeEngine)):
            raise TypeError(f"engine_class must be a experta.KnowledgeEngine subclass, got {engine_class!r}")
        self.engine_class = engine_class
        self.config = config or EngineConfig()
        if fact_types is None:
            module = sys.modules.get(engine_class.__module__)
            fact_types = (
                [
                    v
                    for v in vars(module).values()
                    if isinstance(v, type) and issubclass(v, experta.Fact) and v is not experta.Fact
                ]
                if module
                else []
            )
        if not isinstance(fact_types, Mapping):
            fact_types = {t.__name__: t for t in fact_types}
        self.fact_types: dict[str, type] = dict(fact_types)
        self._names = {t: n for n, t in self.fact_types.items()}
        self._engine = self._build()
        self._lock = threading.Lock()
        self.name = engine_class.__name__
        self.version = None

    def _build(self) -> Any:
        """A new instance of the engine class (experta builds its Rete network), under `load_timeout`."""
        seconds = self.config.load_timeout
        t0 = time.perf_counter()
        try:
            engine = call_with_deadline(self.engine_class, seconds)
        except DeadlineExceeded:
            raise KnowledgeBaseLoadError(
                f"building the experta engine {self.engine_class.__name__} took longer than its time limit of "
                f"{seconds} s (stopped after {time.perf_counter() - t0:.3f} s; experta compiles every rule's "
                "patterns into its network, and OR constraints multiply them)"
            ) from None
        _keep_modified_handles(engine)
        return engine

    def _to_experta(self, fact: Fact, where: str) -> Any:
        cls = self.fact_types.get(fact.template)
        if cls is None:
            raise FactAssertError(
                f"{where}: template {fact.template!r} has no experta Fact class; known: {sorted(self.fact_types)}"
            )
        positional = [_plain(v) for v in fact.slots.get(IMPLIED, ())]
        named = {k: _plain(v) for k, v in fact.slots.items() if k != IMPLIED}
        return cls(*positional, **named)

    def _from_experta(self, f: Any) -> Fact:
        data = f.as_dict()
        positional = tuple(_back(data[k]) for k in sorted(k for k in data if isinstance(k, int)))
        slots: dict[str, Any] = {str(k): _back(v) for k, v in data.items() if not isinstance(k, int)}
        if positional or not slots:
            slots[IMPLIED] = positional
        template = self._names.get(type(f), type(f).__name__)
        fact = object.__new__(Fact)
        object.__setattr__(fact, "template", template)
        object.__setattr__(fact, "slots", slots)
        object.__setattr__(fact, "id", int(f["__factid__"]))
        return fact

    def evaluate(
        self,
        facts: FactsInput | None = None,
        *,
        strategy: str | Strategy | None = None,
        max_firings: int | None = None,
        timeout: float | None = None,
        seed: int | None = None,
        templates: Iterable[str] | None = None,
    ) -> ForwardResult:
        """See `ForwardChainer.evaluate`. `seed` is ignored (experta has no random strategy)."""
        strat = Strategy.parse(strategy)
        if strat is not Strategy.DEPTH:
            raise ValueError(f"experta supports only the 'depth' strategy, got {strat.label!r}")
        items = _facts_allowing_none(facts)
        converted = [self._to_experta(f, f"facts[{i}]") for i, f in enumerate(items)]
        limit = firing_limit(self.config.max_firings if max_firings is None else max_firings)
        seconds = self.config.timeout if timeout is None else timeout
        with self._lock, _STDOUT_LOCK:
            buffer = io.StringIO()
            if self._engine is None:  # the last evaluation was interrupted inside experta
                self._engine = self._build()
            t0 = time.perf_counter()
            engine = self._engine
            firings: list[Firing] = []
            events: list[FactEvent] = []
            wm_before: list[Fact] = []

            def work() -> tuple[str | None, BaseException | None]:
                engine.reset()
                engine._workbench_replaced.clear()
                for f in converted:
                    engine.declare(f)
                return _run(engine, limit, None if seconds is None else t0 + seconds, firings, events)

            with contextlib.redirect_stdout(buffer):
                try:
                    stop, error = call_with_deadline(work, seconds)
                except DeadlineExceeded:  # inside one long experta call: drop the engine
                    stop, error = "timeout", None
                    self._engine = None
            keep = None if templates is None else frozenset(templates)
            wm = (
                [self._from_experta(f) for _, f in sorted(engine.facts.items()) if not isinstance(f, InitialFact)]
                if self._engine is not None
                else wm_before
            )
            if keep is not None:
                wm = [f for f in wm if f.template in keep]
            result = ForwardResult(
                wm, firings, events, buffer.getvalue(), "", "depth", time.perf_counter() - t0, "experta"
            )
        last = [f.rule for f in firings[-10:]]
        if error is not None:
            result.messages = f"{type(error).__name__}: {error}"
            raise RuleExecutionError(
                f"rule {last[-1] if last else '?'} failed: {type(error).__name__}: {error}", result
            ) from error
        named = ", ".join(last) or "(none)"
        if stop == "firings":
            raise FiringLimitError(
                f"runaway knowledge base: stopped after {len(firings)} firings (limit {limit}) with activations "
                f"still on the agenda; last rules fired: {named}",
                result,
                last,
            )
        if stop == "timeout":
            raise EvaluationTimeout(
                f"runaway knowledge base: stopped after {result.seconds:.3f} s (time limit {seconds} s) and "
                f"{len(firings)} firings; last rules fired: {named}"
                + ("" if self._engine is not None else " (stopped inside experta's matcher; working memory not read)"),
                result,
                last,
            )
        return result


def _run(
    engine: Any, limit: int | None, deadline: float | None, firings: list[Firing], events: list[FactEvent]
) -> tuple[str | None, BaseException | None]:
    """experta's `KnowledgeEngine.run` loop (experta 1.9.4, engine.py) with limits and a trace
    (appended to `firings` and `events`, which the caller keeps when the run is interrupted)."""
    engine.running = True
    try:
        while engine.running:
            added, removed = engine.get_activations()
            engine.strategy.update_agenda(engine.agenda, added, removed)
            if limit is not None and len(firings) >= limit:  # a limit of 0 fires nothing and is not a runaway
                return ("firings" if limit and engine.agenda.activations else None), None
            if deadline is not None and time.perf_counter() > deadline and engine.agenda.activations:
                return "timeout", None
            activation = engine.agenda.get_next()
            if activation is None:
                break
            firings.append(
                Firing(
                    activation.rule.__name__,
                    tuple(int(f["__factid__"]) for f in activation.facts if not isinstance(f, InitialFact)),
                )
            )
            index = len(firings) - 1
            try:
                activation.rule(engine, **{k: v for k, v in activation.context.items() if not k.startswith("__")})
            except Exception as exc:  # a failing right-hand side ends the run, like CLIPS
                return None, exc
            for f in engine.facts.removed:
                events.append(FactEvent("retract", int(f["__factid__"]), index))
            for f in engine.facts.added:
                events.append(FactEvent("assert", int(f["__factid__"]), index))
    finally:
        engine.running = False
    return None, None


def _keep_modified_handles(engine: Any) -> None:
    """Give `engine` CLIPS's modify semantics: a handle replaced by `modify` stays valid.

    experta's `modify` retracts the fact and declares a copy with a new id, so a second
    `modify` (or a `retract`) of the handle the rule matched raises "Fact not found"; CLIPS
    keeps the address of a modified fact valid. The engine remembers, per run, which fact
    replaced which (`_workbench_replaced`: old fact id -> new fact) and resolves handles first.
    """
    cls = type(engine)
    engine._workbench_replaced = {}

    def current(fact: Any) -> Any:
        replaced = engine._workbench_replaced
        while isinstance(fact, experta.Fact):
            nxt = replaced.get(fact.get("__factid__"))
            if nxt is None:
                break
            fact = nxt
        return fact

    def modify(self, declared_fact, **modifiers):
        old = current(declared_fact)
        new = cls.modify(self, old, **modifiers)
        if isinstance(old, experta.Fact) and isinstance(new, experta.Fact):
            self._workbench_replaced[old.get("__factid__")] = new
        return new

    def retract(self, idx_or_declared_fact):
        return cls.retract(self, current(idx_or_declared_fact))

    engine.modify = types.MethodType(modify, engine)
    engine.retract = types.MethodType(retract, engine)


def _facts_allowing_none(facts: FactsInput | None) -> list[Fact]:
    """`as_facts`, with `None` (JSON null) accepted as a slot or list value: experta rules test
    for None (`L(None)`). The rest of each fact is checked as usual."""
    if facts is None:
        return []
    items = facts if type(facts) is list else list(facts)
    out: list[Fact] = []
    for i, f in enumerate(items):
        if isinstance(f, Mapping) and _has_none(f.get("slots")) | _has_none(f.get("values")):
            checked = as_facts([_none_to_zero(f)], "facts")[0]  # every other check as usual
            fact = object.__new__(Fact)
            object.__setattr__(fact, "template", checked.template)
            slots = dict(checked.slots)
            if "values" in f:
                slots[IMPLIED] = tuple(f["values"])
            else:
                slots.update({k: tuple(v) if isinstance(v, list) else v for k, v in f["slots"].items()})
            object.__setattr__(fact, "slots", slots)
            object.__setattr__(fact, "id", checked.id)
            out.append(fact)
        else:
            try:
                out.append(as_facts([f], "facts")[0])
            except Exception as exc:  # name the fact's index, as `as_facts` does for a whole list
                raise type(exc)(str(exc).replace("facts[0]", f"facts[{i}]", 1)) from None
    return out


def _has_none(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, Mapping):
        return any(v is None or (isinstance(v, list) and None in v) for v in value.values())
    return isinstance(value, list) and None in value


def _none_to_zero(data: Mapping[str, Any]) -> dict[str, Any]:
    def fix(v: Any) -> Any:
        if v is None:
            return 0
        return [0 if x is None else x for x in v] if isinstance(v, list) else v

    out = dict(data)
    if isinstance(out.get("slots"), Mapping):
        out["slots"] = {k: fix(v) for k, v in out["slots"].items()}
    if isinstance(out.get("values"), list):
        out["values"] = fix(out["values"])
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, str):
        return str(value)
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def _back(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_back(v) for v in value)
    return value
