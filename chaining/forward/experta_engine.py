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
from collections.abc import Iterable, Mapping
from typing import Any

import experta
from experta.fact import InitialFact

from rules.facts import IMPLIED, Fact

from .base import EngineConfig, FactsInput, ForwardChainer, as_facts
from .errors import EvaluationTimeout, FactAssertError, FiringLimitError, RuleExecutionError
from .result import FactEvent, Firing, ForwardResult
from .strategy import Strategy

_STDOUT_LOCK = threading.Lock()


class ExpertaEngine(ForwardChainer):
    """Runs `engine_class` (a `experta.KnowledgeEngine` subclass) behind the forward-chaining interface.

    Args:
        engine_class: the rules, as a KnowledgeEngine subclass.
        fact_types: template name -> experta `Fact` subclass; default: the `Fact` subclasses
            of `engine_class`'s module, by class name.
        config: limits (`max_firings`, `timeout`); `trace_facts` and `workers` are ignored.

    Raises:
        TypeError: `engine_class` is not a KnowledgeEngine subclass.
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
        self._engine = engine_class()
        self._lock = threading.Lock()
        self.name = engine_class.__name__
        self.version = None

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
        items = as_facts(facts)
        converted = [self._to_experta(f, f"facts[{i}]") for i, f in enumerate(items)]
        limit = self.config.max_firings if max_firings is None else max_firings
        seconds = self.config.timeout if timeout is None else timeout
        with self._lock, _STDOUT_LOCK:
            buffer = io.StringIO()
            t0 = time.perf_counter()
            engine = self._engine
            with contextlib.redirect_stdout(buffer):
                engine.reset()
                for f in converted:
                    engine.declare(f)
                firings, events, stop, error = _run(engine, limit, None if seconds is None else t0 + seconds)
            keep = None if templates is None else frozenset(templates)
            wm = [self._from_experta(f) for _, f in sorted(engine.facts.items()) if not isinstance(f, InitialFact)]
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
        if stop == "firings":
            raise FiringLimitError(
                f"runaway knowledge base: stopped after {len(firings)} firings (limit {limit}) with activations still "
                f"on the agenda; last rules fired: {', '.join(last)}",
                result,
                last,
            )
        if stop == "timeout":
            raise EvaluationTimeout(
                f"runaway knowledge base: stopped after {result.seconds:.3f} s (time limit {seconds} s) and "
                f"{len(firings)} firings; last rules fired: {', '.join(last)}",
                result,
                last,
            )
        return result


def _run(
    engine: Any, limit: int | None, deadline: float | None
) -> tuple[list[Firing], list[FactEvent], str | None, BaseException | None]:
    """experta's `KnowledgeEngine.run` loop (experta 1.9.4, engine.py) with limits and a trace."""
    firings: list[Firing] = []
    events: list[FactEvent] = []
    engine.running = True
    try:
        while engine.running:
            added, removed = engine.get_activations()
            engine.strategy.update_agenda(engine.agenda, added, removed)
            if limit is not None and len(firings) >= limit:
                return firings, events, ("firings" if engine.agenda.activations else None), None
            if deadline is not None and time.perf_counter() > deadline and engine.agenda.activations:
                return firings, events, "timeout", None
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
                return firings, events, None, exc
            for f in engine.facts.removed:
                events.append(FactEvent("retract", int(f["__factid__"]), index))
            for f in engine.facts.added:
                events.append(FactEvent("assert", int(f["__factid__"]), index))
    finally:
        engine.running = False
    return firings, events, None, None


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
