"""The result of one forward-chaining evaluation, the same shape for every backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from rules.facts import Fact


class Firing(NamedTuple):
    """One rule firing: the rule's name and the ids of the facts that activated it, in pattern order.

    Patterns matched by no fact (`not`, `exists`, `forall`, `test`) contribute no id.
    (A named tuple: thousands are made per evaluation, and a tuple is the cheapest record.)
    """

    rule: str
    facts: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "facts": list(self.facts)}


class FactEvent(NamedTuple):
    """A change of working memory during the run (a named tuple, like `Firing`).

    Attributes:
        kind: "assert" or "retract".
        fact: the fact id.
        firing: index into `ForwardResult.firings` of the firing whose right-hand side made the
            change (None: before the first firing). This is the derivation record explanations read.
    """

    kind: str
    fact: int
    firing: int | None = None


@dataclass(slots=True)
class ForwardResult:
    """What one evaluation produced.

    Attributes:
        facts: the final working memory, each fact with its id (CLIPS fact index), in id order.
        firings: the rules fired, in firing order.
        events: asserts and retracts during the run, in order, each with the firing that made
            it (recorded only when the engine traces facts, `EngineConfig.trace_facts`; empty
            otherwise). A CLIPS `modify` keeps the fact id and
            shows as a retract followed by an assert of the same id.
        output: the text the rules printed to standard output (`printout t`, `println`, ...).
        messages: warnings and errors CLIPS printed (its `stdwrn` and `stderr`).
        strategy: the conflict-resolution strategy used.
        seconds: wall time of the run (assert + run + read-back), seconds.
        backend: "clips" or "experta".
        versions: fact id -> the versions of it the run ended (retracted, or replaced by `modify`), in
            order, each `(index of the firing that ended it, or None before the first firing; the fact as
            it was)`; recorded only with `EngineConfig.trace_versions` (empty otherwise).
    """

    facts: list[Fact] = field(default_factory=list)
    firings: list[Firing] = field(default_factory=list)
    events: list[FactEvent] = field(default_factory=list)
    output: str = ""
    messages: str = ""
    strategy: str = "depth"
    seconds: float = 0.0
    backend: str = "clips"
    versions: dict[int, list[tuple[int | None, Fact]]] = field(default_factory=dict)

    @property
    def asserted(self) -> list[int]:
        """Ids of facts asserted (or re-asserted by `modify`) during the run, in order."""
        return [e.fact for e in self.events if e.kind == "assert"]

    @property
    def retracted(self) -> list[int]:
        """Ids of facts retracted (or retracted by `modify`) during the run, in order."""
        return [e.fact for e in self.events if e.kind == "retract"]

    def derived_by(self) -> dict[int, int]:
        """Fact id -> index of the firing that last asserted it (facts asserted by rules only)."""
        out: dict[int, int] = {}
        for e in self.events:
            if e.kind == "assert" and e.firing is not None:
                out[e.fact] = e.firing
        return out

    def _repr_html_(self) -> str:
        """Jupyter: the printed text, the firings and the final facts as HTML tables."""
        from chaining.display import forward_result_html

        return forward_result_html(self)

    def __rich__(self) -> Any:
        """`rich.print(result)`: the printed text, the firings and the final facts as tables."""
        from chaining.display import forward_result_rich

        return forward_result_rich(self)

    def facts_of(self, template: str) -> list[Fact]:
        """The final facts of one template (or ordered relation)."""
        return [f for f in self.facts if f.template == template]

    def to_dict(self) -> dict[str, Any]:
        """JSON form used by `workbench kb run --json`:

        `{"output": str, "firings": [{"rule", "facts": [ids]}], "facts": [{"id", "template", "slots"}],
        "events": [{"kind", "fact", "firing"}], "messages": str, "strategy": str, "backend": str}`.
        """
        return {
            "output": self.output,
            "firings": [f.to_dict() for f in self.firings],
            "facts": [f.to_dict() for f in self.facts],
            "events": [{"kind": e.kind, "fact": e.fact, "firing": e.firing} for e in self.events],
            "messages": self.messages,
            "strategy": self.strategy,
            "backend": self.backend,
        }
