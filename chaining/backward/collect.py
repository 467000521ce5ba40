"""The answers of one `Session.prove`: de-duplicated by a small key, counted, streamed to
`on_answer`, kept or not (`Collector`); and the cyclic garbage collector relaxed while proofs run
(`relaxed_gc`)."""

from __future__ import annotations

import contextlib
import gc
import threading

from rules.facts import IMPLIED, Fact, String, Symbol

from . import certainty as cfm
from .errors import BackwardError
from .proof import Proof
from .results import Answer
from .terms import fact_key, vkey

_TAGS = {Symbol: "y", String: "s", int: "i", float: "f"}


def _answer_key(fact: Fact, pairs: dict) -> tuple:
    """`fact_key` of an answer, built inline for an ordered fact (the common case: one call per answer)
    from typed values interned in `pairs` (a query's answers share their values: a 100,000-answer
    query keeps 100,000 small keys, not 300,000 tuples); the relation is left out (one goal, one
    relation); when every value is a symbol, the fact's values themselves (never equal to a tuple of
    typed keys, whose items are tuples). Never equal to a `fact_key`, whose first item is the relation's name."""
    slots = fact.slots
    vals = slots.get(IMPLIED)
    if vals is None or len(slots) != 1:
        return fact_key(fact)
    for v in vals:
        if type(v) is not Symbol:
            break
    else:  # every value a symbol (the common case): the fact's own tuple, as `tables.table_key`
        return vals
    out = []
    for v in vals:
        tv = (type(v), v)
        k = pairs.get(tv)
        if k is None:
            tag = _TAGS.get(tv[0])
            k = pairs[tv] = (tag, v) if tag is not None else vkey(v)
        out.append(k)
    return tuple(out)


class Collector:
    """The answers of one `prove`: de-duplicated, counted, streamed to `on_answer`, kept or not."""

    def __init__(self, goal, goal_vars, single, simple, limit, on_answer, keep, cf_on):
        self.goal, self.goal_vars, self.single, self.simple = goal, goal_vars, single, simple
        self.limit, self.on_answer, self.keep, self.cf_on = limit, on_answer, keep, cf_on
        self.answers: list[Answer] = []
        self.seen: set[tuple] = set()
        self.pairs: dict = {}  # (type, value) -> its typed key, shared by the answers' keys
        self.count = 0
        self.unkeyed = False  # answers were added by `add_new` (none kept in `seen`)
        self.truth = "true"
        self.proofs = True

    def add_new(self, vals: tuple, fact: Fact, proof: Proof, bindings: dict) -> bool:
        """`add_row` for a row known to be a new answer, different from every other answer this query
        can find (a join whose rows are distinct and the only source of the goal's answers, join.py):
        no de-duplication key is kept. True when the limit is reached."""
        self.count += 1
        self.unkeyed = True
        a = Answer(bindings, proof, fact, None, self.truth)
        if self.keep:
            self.answers.append(a)
        if self.on_answer is not None:
            self.on_answer(a)
        return self.limit is not None and self.count >= self.limit

    def add_row(self, vals: tuple, fact: Fact, proof: Proof, bindings: dict) -> bool:
        """`add` for a row of a join (join.py) answering a one-pattern, simple goal without certainty
        factors: `vals` the answer fact's values, `bindings` (a fresh dict) the goal's variables in
        the goal's order. True when the limit is reached."""
        for v in vals:
            if type(v) is not Symbol:
                bk = _answer_key(fact, self.pairs)
                break
        else:  # every value a symbol: the values are the key (as `_answer_key`)
            bk = vals
        seen = self.seen
        if self.unkeyed:
            raise BackwardError("internal: an answer after the rows of the goal's only source")
        if bk in seen:
            return False
        seen.add(bk)
        self.count += 1
        a = Answer(bindings, proof, fact, None, self.truth)
        if self.keep:
            self.answers.append(a)
        if self.on_answer is not None:
            self.on_answer(a)
        return self.limit is not None and self.count >= self.limit

    def add(self, b: dict, pf: tuple) -> bool:
        """Record one solution; True when the limit is reached (never with certainty factors)."""
        goal_vars = self.goal_vars
        if self.single:
            fact = pf[0].fact
            bindings = {k: b[k] for k in goal_vars if k in b}
            # a simple pattern's bindings are a function of the fact: the fact identifies the answer
            fk = _answer_key(fact, self.pairs)
            bk = fk if self.simple else (fk, _bindings_key(bindings))
            a = Answer(bindings, pf[0], fact, pf[0].certainty, self.truth)
        else:
            bindings = {k: b[k] for k in goal_vars if k in b and not isinstance(b[k], Fact)}
            bk = _bindings_key(bindings)
            cf = cfm.conjunction([p.certainty for p in pf if p.certainty is not None]) if self.cf_on else None
            proof = Proof("goal", premises=list(pf), detail=self.goal, certainty=cf)
            a = Answer(bindings, proof, None, cf, self.truth)
        if self.unkeyed:
            raise BackwardError("internal: an answer after the rows of the goal's only source")
        if bk in self.seen:
            return False
        self.seen.add(bk)
        self.count += 1
        if self.cf_on:
            self.answers.append(a)
            return False
        if self.keep:
            self.answers.append(a)
        if self.on_answer is not None:
            self.on_answer(a)
        return self.limit is not None and self.count >= self.limit


_gc_users = 0
_gc_lock = threading.Lock()
_gc_saved: tuple[int, ...] = ()


@contextlib.contextmanager
def relaxed_gc():
    """Collect the youngest generation every 50,000 allocations instead of 700 while proofs run: a large
    query allocates a few small objects per answer and CPython's cyclic collector otherwise took about
    half of its time. Restored when the last running proof ends."""
    global _gc_users, _gc_saved
    with _gc_lock:  # proofs may run in worker threads (asyncio.to_thread) as well as in one event loop
        if _gc_users == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(50_000, 20, 50)
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0:
                gc.set_threshold(*_gc_saved)


def _bindings_key(bindings: dict) -> tuple:
    return tuple((k, vkey(v)) for k, v in bindings.items())
