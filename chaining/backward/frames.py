"""Data of the proof engine: continuation frames, the goal context, tables, barriers, the oracle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rules.facts import Fact

from .proof import Proof
from .terms import fact_key

# ---- continuation frames ----------------------------------------------------------------------


class Ctx:
    """A goal being proved by a rule (or the query): for depth, WHY chains and error messages."""

    __slots__ = ("text", "rule", "parent", "depth", "neg")

    def __init__(self, text: str, rule: str | None, parent: Ctx | None, depth: int, neg: bool = False):
        self.text, self.rule, self.parent, self.depth = text, rule, parent, depth
        self.neg = neg or (parent is not None and parent.neg)  # inside a negation read from the WFS oracle

    def chain(self) -> list[Ctx]:
        out = []
        c: Ctx | None = self
        while c is not None:
            out.append(c)
            c = c.parent
        out.reverse()
        return out


class Seq:
    """Prove ces[i:], then continue with `nxt`."""

    __slots__ = ("ces", "i", "nxt")

    def __init__(self, ces: list, i: int, nxt: Any):
        self.ces, self.i, self.nxt = ces, i, nxt


class Ret:
    """A rule's premises are proved: conclude its heads, then return to the caller (SLD) or add the
    conclusion to `table` (SLG). Holds the caller's pattern, bindings, proofs and context."""

    __slots__ = ("br", "heads", "p", "key", "b", "pf", "ctx", "nxt", "table", "fast")

    def __init__(self, br, heads, p, key, b, pf, ctx, nxt, table):
        self.br, self.heads, self.p, self.key, self.b, self.pf = br, heads, p, key, b, pf
        self.ctx, self.nxt, self.table = ctx, nxt, table
        self.fast: Any = None  # SLD: how a conclusion binds the caller (`TablesMixin._sld_binder`), once known


class Exit:
    """Leaving the region of `barrier` with a solution."""

    __slots__ = ("barrier",)

    def __init__(self, barrier: Barrier):
        self.barrier = barrier


class Top:
    """The query's end: an answer."""

    __slots__ = ()


TOP = Top()


# ---- tables and barriers ----------------------------------------------------------------------


@dataclass(slots=True)
class TAnswer:
    fact: Fact
    proof: Proof
    cf: float | None
    contributions: dict[tuple, float] | None = None  # certainty factors: each derivation's certainty


@dataclass(slots=True, eq=False)
class Table:
    key: tuple
    text: str
    dfn: int
    ctx: Ctx
    answers: list[TAnswer | Proof] = field(default_factory=list)  # a Proof: an answer without certainty factors
    by_key: dict[tuple, TAnswer | Proof] = field(default_factory=dict)
    consumers: list[tuple] = field(default_factory=list)  # (pattern, bindings, proofs, ctx, nxt, binder)
    leader: int = 0
    complete: bool = False
    dead: bool = False


@dataclass(slots=True, eq=False)
class Barrier:
    """A region of the choice-point stack proving a `not`, `exists`, `forall`, a ground call
    (`once`) or an `or` under certainty factors (`ormax`)."""

    kind: str
    dfn: int
    height: int
    cont: tuple  # (nxt, bindings, proofs, ctx) to continue with
    detail: str = ""
    leader: int = 0
    done: bool = False
    popped: bool = False
    witnesses: list = field(default_factory=list)
    best: dict = field(default_factory=dict)
    parent: Barrier | None = None  # forall-check: the forall whose instance it tests
    rest: list = field(default_factory=list)  # forall: the patterns every instance must satisfy


class Marker:
    """On the choice-point stack below a table's producers: popped when they are exhausted."""

    __slots__ = ("table",)

    def __init__(self, table: Table):
        self.table = table


class AskReq:
    """Yielded by an alternatives iterator: ask a question (awaited by the run loop)."""

    __slots__ = ("fact", "spec", "text", "p", "key", "b", "pf", "ctx", "nxt", "table")

    def __init__(self, fact, spec, text, p, key, b, pf, ctx, nxt, table):
        self.fact, self.spec, self.text, self.p, self.key = fact, spec, text, p, key
        self.b, self.pf, self.ctx, self.nxt, self.table = b, pf, ctx, nxt, table


@dataclass(slots=True)
class Oracle:
    """What a negation reads during one step of the well-founded alternating fixpoint (`wfs`):
    `all_true` (every negation fails), or the derived facts of the previous step (`index`)."""

    all_true: bool = False
    index: Any = None


def chain_text(chain: list[str], head: int = 4, tail: int = 3) -> str:
    """A goal chain, outermost first, joined by ' <- '; a long one shortened in the middle."""
    if len(chain) <= head + tail + 1:
        return " <- ".join(chain)
    return " <- ".join(chain[:head]) + f" <- ... ({len(chain) - head - tail} more) ... <- " + " <- ".join(chain[-tail:])


def record_derivation(ta: TAnswer, proof: Proof) -> None:
    """A further derivation of an answer (certainty factors): the answer's proof node, which other
    proofs already point to, becomes a "combined" node over every derivation."""
    node = ta.proof
    if node.kind != "combined":
        first = Proof(
            node.kind,
            node.fact,
            node.source,
            node.rule,
            node.bindings,
            node.premises,
            node.certainty,
            node.detail,
            node.fact_id,
        )
        node.kind, node.rule, node.source, node.bindings, node.detail, node.fact_id = (
            "combined",
            None,
            None,
            {},
            None,
            None,
        )
        node.premises = [first]
    node.premises.append(proof)
    node.detail = f"{len(node.premises)} derivations combined (EMYCIN)"


def mentions(proofs: tuple | list, key: tuple) -> bool:
    """Whether any node under `proofs` establishes the fact with `key` (iterative, shared nodes once)."""
    seen: set[int] = set()
    work = list(proofs)
    while work:
        p = work.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        if p.fact is not None and fact_key(p.fact) == key:
            return True
        work.extend(p.premises)
    return False
