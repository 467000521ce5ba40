"""Negation through recursion under the well-founded semantics (Van Gelder, Ross & Schlipf, JACM 1991).

Used only when a proof meets negation through a cycle (the engine's NotStratifiedError); a
stratified program is answered by the engine alone, unchanged. The well-founded model is
computed by Van Gelder's alternating fixpoint over the derived relations: K0 is what can be
derived when every negation fails; U_i is what can be derived when `(not G)` holds iff G is not
in K_i (an overestimate); K_{i+1} when `(not G)` holds iff G is not in U_i (an underestimate);
K grows and U shrinks until both are stable. Then K holds the true facts, U minus K the
undefined ones, everything else is false. Each step is an ordinary proof (`engine.Query`) in
which a negation reads the previous step's facts (`engine.Oracle`), so no step recurses through
negation. The goal is then answered twice: with the oracle U (true answers) and with the oracle K
(true or undefined answers; those not true are reported with truth "undefined").

Cost: each step proves the most general goal of every derived relation, so a relation with
infinitely many facts makes this run until the time limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .engine import Oracle, Query
from .goals import parse_goal
from .index import FactIndex
from .terms import fact_key

if TYPE_CHECKING:
    from .session import Session


def _general_goal(session: Session, rel: str) -> str:
    t = session.kb.templates.get(rel)
    return f"({rel})" if t is not None and t.slots else f"({rel} $?args)"


async def _model(session: Session, deadline: float | None, oracle: Oracle) -> tuple[frozenset, FactIndex]:
    """Every derived fact provable when negations read `oracle`: (their keys, an index of them)."""
    index = FactIndex()
    keys: set[tuple] = set()
    for rel in sorted(session.rules_for):
        goal = _general_goal(session, rel)
        q = Query(session, deadline, oracle)
        q.start(parse_goal(goal, session.kb), goal)
        await q.run(None)
        for _, pf in q.out:
            f = pf[0].fact
            k = fact_key(f)
            if k not in keys:
                keys.add(k)
                index.add(f, "well-founded model", None)
    return frozenset(keys), index


async def well_founded(session: Session, deadline: float | None) -> tuple[FactIndex, FactIndex]:
    """The alternating fixpoint: (K, U) as indexes of facts: true facts, and true-or-undefined facts."""
    k_keys, k_index = await _model(session, deadline, Oracle(all_true=True))
    u_keys, u_index = await _model(session, deadline, Oracle(False, k_index))
    while True:
        k2_keys, k2_index = await _model(session, deadline, Oracle(False, u_index))
        u2_keys, u2_index = await _model(session, deadline, Oracle(False, k2_index))
        if k2_keys == k_keys and u2_keys == u_keys:
            return k2_index, u2_index
        k_keys, k_index, u_keys, u_index = k2_keys, k2_index, u2_keys, u2_index
