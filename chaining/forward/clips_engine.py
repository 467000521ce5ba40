"""`ForwardEngine`: a compiled knowledge base served to many threads, on the real CLIPS engine.

Each worker thread borrows one CLIPS environment (`ClipsRunner`) from a pool for the length of
one evaluation; environments are built lazily up to `EngineConfig.workers` and reused (reset,
never reloaded), so the cost of an evaluation does not depend on how many ran before.
A runner whose evaluation failed is still usable: the next evaluation starts with a reset, after
the settings a rule may have changed are restored (`clips_reset`); an environment whose rules
call what no reset undoes (`watch`, `undefrule`...) is dropped after each evaluation and built again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .base import EngineConfig, FactsInput, ForwardChainer, as_facts, firing_limit
from .cancellation import Cancellation
from .clips_runner import ClipsRunner
from .result import ForwardResult
from .strategy import Strategy


class ForwardEngine(ForwardChainer):
    """Forward chaining over a knowledge base on CLIPS 6.4 (clipspy), thread-safe and reusable.

    Build with `ForwardEngine.from_knowledge_base(kb)` (a validated `rules.KnowledgeBase`) or
    `ForwardEngine.from_files(paths)` (validates first). `evaluate(...)` as in `ForwardChainer`.

    Attributes:
        name, version: the knowledge base's name and content hash (None when built from sources).
    """

    backend = "clips"

    def __init__(
        self,
        kb: Any,
        *,
        functions: Mapping[str, Callable] | None = None,
        config: EngineConfig | None = None,
    ):
        """An engine for a validated `rules.KnowledgeBase` (see `from_knowledge_base`).

        Only validated text reaches CLIPS: `kb` must come from `rules` (its loaders validate),
        because building a construct can run code (a `defglobal` initialiser).
        """
        if not hasattr(kb, "sources") or not hasattr(kb, "version"):
            raise TypeError(
                f"ForwardEngine needs a validated rules.KnowledgeBase, got {type(kb).__name__}; "
                "use ForwardEngine.from_sources or from_files for text"
            )
        self.config = config or EngineConfig()
        self.knowledge_base = kb
        self.sources = [(str(f), str(t)) for f, t in kb.sources]
        self.functions = dict(functions or {})
        for fname, fn in self.functions.items():
            if not callable(fn):
                raise TypeError(f"functions[{fname!r}] is not callable")
        self.name = getattr(kb, "name", None)
        self.version = getattr(kb, "version", None)
        self._default_strategy = Strategy.parse(self.config.strategy)
        self._idle: list[ClipsRunner] = []  # list.append/pop are atomic: the fast path takes no lock
        self._lock = threading.Lock()
        self._returned = threading.Condition(self._lock)
        self._closed = False
        # Build the first environment now so that load errors surface at construction.
        self._created = 1
        first = self._new_runner()
        #: What loading reported about constructs CLIPS skipped (`file:line:col: ...`, `ClipsRunner.load_messages`).
        self.load_messages: list[str] = list(first.load_messages)
        self._idle.append(first)

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_knowledge_base(
        cls, kb: Any, *, functions: Mapping[str, Callable] | None = None, config: EngineConfig | None = None
    ) -> ForwardEngine:
        """An engine for a validated `rules.KnowledgeBase` (uses `kb.sources`, `kb.name`, `kb.version`).

        Raises:
            KnowledgeBaseLoadError: CLIPS refused a construct the validator passed (`file:line:col`).
        """
        return cls(kb, functions=functions, config=config)

    @classmethod
    def from_sources(
        cls,
        sources: Sequence[tuple[str, str]],
        *,
        name: str = "knowledge-base",
        functions: Mapping[str, Callable] | None = None,
        config: EngineConfig | None = None,
        allow_unsafe: bool = False,
    ) -> ForwardEngine:
        """Validate `(file name, text)` pairs with `rules.knowledge_base_from_sources`, then build.

        Raises:
            rules.RuleError: the text does not validate (located diagnostics).
            KnowledgeBaseLoadError: CLIPS refused a construct.
        """
        import rules

        kb = rules.knowledge_base_from_sources(
            name, list(sources), allow_unsafe=allow_unsafe, functions=tuple(functions or ())
        )
        return cls(kb, functions=functions, config=config)

    @classmethod
    def from_files(
        cls,
        paths: Iterable[str | Path],
        *,
        functions: Mapping[str, Callable] | None = None,
        config: EngineConfig | None = None,
        allow_unsafe: bool = False,
        name: str | None = None,
    ) -> ForwardEngine:
        """Validate rule files with `rules.load_knowledge_base` and build an engine from them.

        Raises:
            rules.RuleError: the files do not validate (located diagnostics).
            KnowledgeBaseLoadError: CLIPS refused a construct.
        """
        import rules

        kb = rules.load_knowledge_base(
            [Path(p) for p in paths], name=name, allow_unsafe=allow_unsafe, functions=tuple(functions or ())
        )
        return cls(kb, functions=functions, config=config)

    def _new_runner(self) -> ClipsRunner:
        return ClipsRunner(
            self.sources,
            self.functions,
            trace_firings=self.config.trace_firings,
            trace_facts=self.config.trace_facts,
            trace_versions=self.config.trace_versions,
            native=self.config.native,
            build_timeout=self.config.load_timeout,
            console=self.config.console,
            memory_limit=self.config.memory_limit,
        )

    # -- pool ----------------------------------------------------------------------------
    def _acquire(self) -> ClipsRunner:
        if self._closed:
            raise RuntimeError("ForwardEngine is closed")
        try:
            return self._idle.pop()
        except IndexError:
            pass
        with self._lock:  # reserve a slot atomically so concurrent callers never exceed `workers`
            while True:
                if self._idle:
                    return self._idle.pop()
                if self._created < self.config.workers:
                    self._created += 1
                    break
                self._returned.wait()
        try:
            return self._new_runner()
        except BaseException:
            with self._lock:
                self._created -= 1
                self._returned.notify()
            raise

    def _release(self, runner: ClipsRunner) -> None:
        if runner.state.needs_rebuild:  # its rules changed what no reset restores (`clips_reset`)
            runner.close()
            with self._lock:
                self._created -= 1
                self._returned.notify()
            return
        self._idle.append(runner)
        if self._created >= self.config.workers:  # someone may be waiting for a runner
            with self._lock:
                self._returned.notify()

    @property
    def environments(self) -> int:
        """How many CLIPS environments this engine holds (built and not dropped)."""
        return self._created

    # -- evaluation ---------------------------------------------------------------------
    def evaluate(
        self,
        facts: FactsInput | None = None,
        *,
        strategy: str | Strategy | None = None,
        max_firings: int | None = None,
        timeout: float | None = None,
        seed: int | None = None,
        templates: Iterable[str] | None = None,
        cancel: Cancellation | None = None,
        trace_versions: bool = False,
    ) -> ForwardResult:
        """Reset, assert `facts`, run; see `ForwardChainer.evaluate` for arguments and errors.

        `templates`: report only the final facts of these templates (None: all of working
        memory). Serving callers that read a few output templates save the read-back.
        `cancel`: `cancel.cancel()` from another thread halts the run (EvaluationCancelled, with the
        partial result), as its time limit would; a server's answer to a client that left.
        `trace_versions`: record this run's fact versions (`ForwardResult.versions`) even when the config
        does not (`EngineConfig.trace_versions`); a pipeline run asked to explain sets it.
        """
        strat = self._default_strategy if strategy is None else Strategy.parse(strategy, self._default_strategy)
        items = as_facts(facts)
        limit = firing_limit(self.config.max_firings if max_firings is None else max_firings)
        seconds = self.config.timeout if timeout is None else timeout
        if seconds is not None and seconds <= 0:
            raise ValueError(f"timeout must be positive seconds, got {seconds}")
        runner = self._acquire()
        try:
            return runner.evaluate(
                items,
                strategy=strat,
                max_firings=limit,
                timeout=seconds,
                seed=seed,
                run_chunk=self.config.run_chunk,
                templates=templates if templates is None or type(templates) is frozenset else frozenset(templates),
                cancel=cancel,
                trace_versions=trace_versions,
            )
        finally:
            self._release(runner)

    def rule_names(self) -> list[str]:
        """Names of the rules in the knowledge base."""
        runner = self._acquire()
        try:
            return runner.rule_names()
        finally:
            self._release(runner)

    def close(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()
