"""Argument indexing of base facts: a call looks up only the facts that agree with its bound fields.

An index is built on first use for each *mode* a relation is called with (the positions of an
ordered fact, or the slots of a template fact, that the call binds to constants), as in
SWI-Prolog's just-in-time clause indexing: `(edge n5 ?y)` reads one hash bucket instead of
scanning every edge fact. Buckets keep the facts' order (deffacts order, then working memory).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rules.facts import IMPLIED, Fact

from .proof import NO_BINDINGS, Proof
from .terms import vkey


@dataclass(slots=True)
class BaseFact:
    """A given fact with its source ("deffacts" / "working-memory"), certainty and shared proof node."""

    fact: Fact
    source: str
    cf: float | None
    proof: Proof


@dataclass(slots=True)
class FactIndex:
    """Base facts of every relation, with lazily built per-mode hash indexes."""

    by_relation: dict[str, list[BaseFact]] = field(default_factory=dict)
    _indexes: dict[tuple, dict[tuple, list[BaseFact]]] = field(default_factory=dict)

    def add(self, fact: Fact, source: str, cf: float | None) -> None:
        proof = Proof("fact", fact, source, bindings=NO_BINDINGS, premises=(), certainty=cf, fact_id=fact.id)
        self.by_relation.setdefault(fact.template, []).append(BaseFact(fact, source, cf, proof))
        self._indexes.clear()

    def field_counts(self) -> dict[str, set[int]]:
        """Ordered relation -> the numbers of fields its base facts have (template facts left out)."""
        out: dict[str, set[int]] = {}
        for rel, facts in self.by_relation.items():
            for bf in facts:
                if bf.fact.is_ordered:
                    out.setdefault(rel, set()).add(len(bf.fact.values))
        return out

    def count(self, relation: str) -> int:
        return len(self.by_relation.get(relation, ()))

    def lookup(self, key: tuple) -> list[BaseFact]:
        """Facts that may match a call with variant `key` (see `CallsMixin._call_key`): those agreeing
        with every bound field. The caller still matches each fact against its pattern."""
        rel, kind = key[0], key[1]
        facts = self.by_relation.get(rel)
        if not facts:
            return []
        if kind == "o":
            mode = tuple(i for i, k in enumerate(key[2]) if k is not None)
            if not mode:
                return facts
            wanted = tuple(key[2][i] for i in mode)
        else:
            if not key[2]:
                return facts
            mode = tuple(s for s, _ in key[2])
            wanted = tuple(k for _, k in key[2])
        idx = self._indexes.get((rel, kind, mode))
        if idx is None:
            idx = self._indexes[(rel, kind, mode)] = self._build(facts, kind, mode)
        return idx.get(wanted, [])

    @staticmethod
    def _build(facts: list[BaseFact], kind: str, mode: tuple) -> dict[tuple, list[BaseFact]]:
        idx: dict[tuple, list[BaseFact]] = {}
        for bf in facts:
            slots = bf.fact.slots
            if kind == "o":
                vals = slots.get(IMPLIED)
                if vals is None or len(vals) <= mode[-1]:
                    continue
                k = tuple(vkey(vals[i]) for i in mode)
            else:
                if any(s not in slots for s in mode):
                    continue
                k = tuple(vkey(slots[s]) for s in mode)
            idx.setdefault(k, []).append(bf)
        return idx
