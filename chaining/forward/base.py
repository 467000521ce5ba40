"""The forward-chaining engine interface shared by the CLIPS and experta backends."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rules.facts import Fact

from .result import ForwardResult
from .strategy import Strategy


@dataclass(slots=True)
class EngineConfig:
    """Limits and tracing of evaluations.

    Attributes:
        max_firings: default firing limit per evaluation (None or negative: unlimited; see `firing_limit`).
        timeout: default time limit per evaluation, seconds (None: unlimited). Checked between
            batches of `run_chunk` firings, and enforced inside a right-hand side, a `test` or a
            deffacts/defglobal expression by CLIPS's halt flags (`clips_halt`), at most
            `clips_halt.POLL_SECONDS` late.
        load_timeout: time limit on loading the knowledge base into one CLIPS environment, seconds
            (None: unlimited), separate from `timeout`: a `defglobal` initialiser or deffacts
            expression runs code while it is built. Checked between constructs and inside
            expressions; CLIPS's reader of one construct's text cannot be interrupted (it takes
            ~8 s on a 1 MiB string literal).
        memory_limit: bytes of memory CLIPS may hold in one environment during an evaluation
            (its `(mem-used)`, polled with the time limit); past it the run is halted with
            `MemoryLimitError`. None: unlimited.
        console: a `clips_console.Console` for programs that read the terminal (`read`,
            `readline`, `read-number`, `get-char`) and print prompts; None (servers and
            pipelines): such a read fails with a clear error.
        workers: most CLIPS environments kept for concurrent evaluations (one per thread at a time).
        trace_firings: record the rules fired and their activating facts (`ForwardResult.firings`);
            False leaves `firings` empty (explanations need it; a gate that reads only its
            decision facts may turn it off).
        trace_facts: record asserts and retracts during the run (`ForwardResult.events`).
        trace_versions: also record the content of each fact version a retract or `modify` ends
            (`ForwardResult.versions`), so an explanation shows what an earlier firing matched; off by
            default (a Python call per retract); the CLIPS backend only (experta leaves it empty).
        run_chunk: firings per CLIPS `Run` call when a limit or timeout applies.
        strategy: default conflict-resolution strategy.
        native: the CLIPS engine's C parts (built by the bootstrap when a C compiler is present):
            the trace recorder (`chaining/forward/native_trace.c`) and the fact asserter
            (`native_facts.c`). None (default): use each when it is built, else its Python
            code; True: require them (an engine without them fails to build); False: Python
            only. Same results either way; the C parts are faster.
    """

    max_firings: int | None = 1_000_000
    timeout: float | None = 60.0
    load_timeout: float | None = 120.0
    memory_limit: int | None = 512 << 20
    console: Any = None
    workers: int = max(1, os.cpu_count() or 1)
    trace_firings: bool = True
    trace_facts: bool = True
    trace_versions: bool = False
    run_chunk: int = 2000
    strategy: str = "depth"
    native: bool | None = None

    def __post_init__(self) -> None:
        if self.max_firings is not None and (
            not isinstance(self.max_firings, int) or isinstance(self.max_firings, bool)
        ):
            raise ValueError(f"EngineConfig.max_firings must be an int or None, got {self.max_firings!r}")
        if self.timeout is not None and not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise ValueError(f"EngineConfig.timeout must be positive seconds or None, got {self.timeout!r}")
        if self.load_timeout is not None and not (
            isinstance(self.load_timeout, (int, float)) and self.load_timeout > 0
        ):
            raise ValueError(f"EngineConfig.load_timeout must be positive seconds or None, got {self.load_timeout!r}")
        if self.memory_limit is not None and (
            not isinstance(self.memory_limit, int) or isinstance(self.memory_limit, bool) or self.memory_limit <= 0
        ):
            raise ValueError(f"EngineConfig.memory_limit must be positive bytes or None, got {self.memory_limit!r}")
        if not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"EngineConfig.workers must be an int >= 1, got {self.workers!r}")
        if not isinstance(self.run_chunk, int) or self.run_chunk < 1:
            raise ValueError(f"EngineConfig.run_chunk must be an int >= 1, got {self.run_chunk!r}")
        Strategy.parse(self.strategy)
        if self.native not in (None, True, False):
            raise ValueError(f"EngineConfig.native must be None, True or False, got {self.native!r}")


FactsInput = Iterable[Fact | Mapping[str, Any]]


def firing_limit(limit: int | None) -> int | None:
    """A firing limit as CLIPS's `(run N)` reads it: None or a negative int -> None (no limit); 0 fires
    no rule; N > 0 fires at most N. Raises ValueError for a value that is not an int."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ValueError(f"max_firings must be an int or None, got {limit!r}")
    return None if limit < 0 else limit


def as_facts(facts: FactsInput | None, where: str = "facts") -> list[Fact]:
    """Normalise facts given as `Fact` objects or JSON-style dicts (see `rules.facts.Fact.from_dict`).

    Raises:
        rules.facts.FactError: naming the index and field at fault, e.g. `facts[2].slots.age`.
    """
    if facts is None:
        return []
    items = facts if type(facts) is list else list(facts)
    for f in items:
        if type(f) is not Fact:
            break
    else:
        return items
    out: list[Fact] = []
    for i, f in enumerate(items):
        out.append(f if isinstance(f, Fact) else Fact.from_dict(f, f"{where}[{i}]"))
    return out


class ForwardChainer(ABC):
    """A forward-chaining engine: facts in, `ForwardResult` out.

    Implementations are reusable across evaluations (working memory is reset, the rules are
    not reloaded) and `evaluate` is safe to call from several threads.
    """

    backend: str = "abstract"

    @abstractmethod
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
        """Reset working memory, assert `facts` (after the knowledge base's own initial facts),
        run to quiescence and return the result.

        Args:
            facts: `Fact` objects or dicts `{"template", "slots"|"values"}`.
            strategy: conflict-resolution strategy name (`Strategy`); None: the engine default.
            max_firings: firing limit, as CLIPS's `(run N)` (None: the engine default; 0 fires no rule
                and is not an error; negative: no limit). A run that reaches a positive limit with
                activations still on the agenda raises FiringLimitError.
            timeout: time limit, seconds (None: the engine default).
            seed: seed for CLIPS's random generator (the `random` strategy), None: leave as is.
            templates: report only the final facts of these templates (None: all).

        Raises:
            FiringLimitError / EvaluationTimeout: the run did not reach quiescence in time.
            RuleExecutionError: a right-hand side failed.
            FactAssertError / rules.facts.FactError: a fact is malformed, naming it.
            ValueError: an unknown strategy.
        """

    def close(self) -> None:  # noqa: B027 (an optional hook: the default holds nothing)
        """Release the engine's resources (idempotent)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
