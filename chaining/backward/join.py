"""Set-at-a-time evaluation of a rule body that is a join of base relations (`engine.Query`).

A rule used by SLD resolution whose premises are all simple ordered patterns (each field a
constant, a variable or `?`) over *base* relations (given facts only: no rule concludes them, none
is askable or tabled, none is a template) has no choice points worth a frame each: its solutions
are a relational join. `JoinPlan` compiles such a body once per rule and call mode (which head
variables the call binds) into a nested-loop index join: each pattern reads the hash bucket of
`index.FactIndex` for the positions bound by the call's constants or by earlier patterns, checks
repeated variables, and binds the rest straight from the fact's values; the head is instantiated
once per row and binds the caller's variables as `TablesMixin._conclude_sld` does. Rows come in
the order SLD resolution finds them (patterns left to right, facts in index order, i.e. Prolog's
order), so answers, their order, their proofs and the first-answer latency are those of the frame
by frame evaluation; only the Python work per row shrinks (a 100,000-answer cross product: about
20 calls per answer down to a few).

When the rule's conclusion continues straight into the query's end (`TOP`) and the query has a
sink (`Session.prove`), each row is handed to the sink inside the loop, not as a state through the
engine's run loop. Proofs: with `Query.proofs` a row's conclusion is the same "rule" node the frame
evaluation builds (the rule's bindings, the matched facts' shared proof nodes as premises);
without, the conclusion only. Certainty factors, `bind` actions, fact addresses, several heads
for the called relation and callers whose pattern needs the general matcher use the frames.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any

from rules import ast
from rules.facts import IMPLIED, Fact

from .frames import TOP, Ctx
from .matcher import compile_pattern, ordered_binder
from .proof import NO_BINDINGS, Proof
from .terms import vkey
from .text import instantiated_text

if TYPE_CHECKING:
    from .engine import Query

_NONE = object()  # a rule whose body is not a base join (cached as such)


class JoinPlan:
    """A rule body as a nested-loop index join, for one call mode (the head variables bound on entry).

    `steps`: one per premise, (relation, arity, lookup, checks, free): `lookup` the (position,
    constant key or variable name) pairs the index bucket is read by, `checks` (position, earlier
    position) pairs of a variable repeated within the pattern, `free` the (name, position) pairs
    of the variables the premise binds. `names`: the head's variables, in field order. `distinct`:
    no two rows conclude the same fact (no premise has a wildcard, every variable is in the head,
    and each premise's relation holds no fact twice: different rows differ in some variable)."""

    __slots__ = ("steps", "names", "relation", "distinct")

    def __init__(self, steps: tuple, names: tuple[str, ...], relation: str, distinct: bool):
        self.steps, self.names, self.relation, self.distinct = steps, names, relation, distinct


def join_plan(q: Query, br: Any, heads: list, pre: dict) -> JoinPlan | None:
    """The join plan of rule `br` concluding `heads` when called with head bindings `pre` (cached per
    rule and mode in `Session.plans`), or None when the body is not a base join (see the module)."""
    s = q.s
    ck = ("join", id(br), tuple(pre))  # by identity: rules of two modules may share a bare name
    got = s.plans.get(ck, None)
    if got is not None and got[0] is br:
        return None if got[1] is _NONE else got[1]
    plan = _compile(q, br, heads, pre)
    s.plans[ck] = (br, _NONE if plan is None else plan)  # the rule is kept so that its id stays unique
    return plan


def _base_relation(s: Any, rel: str) -> bool:
    """Given facts only, every one ordered (no rule, question, table or template involved)."""
    if rel in s.rules_for or rel in s.tabled or rel in s.kb.askable_specs or rel in s.kb.templates:
        return False
    return all(bf.fact.slots.get(IMPLIED) is not None for bf in s.index.by_relation.get(rel, ()))


def _compile(q: Query, br: Any, heads: list, pre: dict) -> JoinPlan | None:
    s = q.s
    if s.cf_on or len(heads) != 1 or br.name in s._rhs_bound or br.name in s._addressed:
        return None
    h = heads[0]
    names = s._head_variables(h)
    if not names or not br.rule.lhs:
        return None
    got = _steps(s, br.rule.lhs, set(pre))
    if got is None:
        return None
    steps, bound, distinct = got
    if any(n not in bound for n in names):
        return None
    distinct = distinct and bound <= set(names) and all(_unique(s, step[0]) for step in steps)
    return JoinPlan(steps, names, h.relation, distinct)


def _steps(s: Any, ces: list, bound: set[str]) -> tuple[tuple, set[str], bool] | None:
    """The join steps of premises `ces` entered with variables `bound` bound: (steps, the variables
    bound after them, no premise has a wildcard), or None when some premise is not a simple ordered
    pattern over a base relation."""
    bound = set(bound)
    steps = []
    distinct = True
    for ce in ces:
        if type(ce) is not ast.Pattern or ce.address or not ce.ordered:
            return None
        rel = ce.template.rsplit("::", 1)[-1]
        if not _base_relation(s, rel):
            return None
        plan = compile_pattern(ce, None, s.plans)
        if plan is None or plan[0] != "o":
            return None
        lookup: list = []
        checks: list = []
        free: list = []
        here: dict[str, int] = {}
        for pos, (kind, arg) in enumerate(plan[2]):
            if kind == 0:
                distinct = False  # `?`: facts differing there give the same row
                continue
            if kind == 1:
                lookup.append((pos, arg, False))
            elif arg in bound:
                lookup.append((pos, arg, True))
            elif arg in here:
                checks.append((pos, here[arg]))
            else:
                here[arg] = pos
                free.append((arg, pos))
        bound.update(here)
        steps.append((rel, plan[1], tuple(lookup), tuple(checks), tuple(free)))
    return tuple(steps), bound, distinct


def query_rows(q: Query, ces: list, ctx: Ctx):
    """The alternatives of a query that is a conjunction of two or more simple ordered patterns over
    base relations, as one join: (TOP, bindings, the matched facts' proofs, ctx) per row, in SLD
    order, each handed to `q.sink` at once when the query has one. None for any other query."""
    s = q.s
    if s.cf_on or len(ces) < 2:
        return None
    got = _steps(s, ces, set())
    return None if got is None else _query_rows(q, got[0], ctx)


def _query_rows(q: Query, steps: tuple, ctx: Ctx):
    index = q.s.index
    last = len(steps) - 1
    facts_at: list = [None] * (last + 1)
    pos_at = [0] * (last + 1)
    rb_at: list = [None] * (last + 2)
    pf_at: list = [None] * (last + 2)
    rb_at[0], pf_at[0] = {}, ()
    facts_at[0] = _bucket(index, steps[0], {})
    i = 0
    n = 0
    while i >= 0:
        facts = facts_at[i]
        j = pos_at[i]
        if j >= len(facts):
            i -= 1
            continue
        pos_at[i] = j + 1
        n += 1
        if not n & 1023:
            q.check_time()
        bf = facts[j]
        vals = bf.fact.slots[IMPLIED]
        _, arity, _, checks, free = steps[i]
        if len(vals) != arity or (checks and any(vkey(vals[a]) != vkey(vals[c]) for a, c in checks)):
            continue
        rb = rb_at[i].copy()
        for name, at in free:
            rb[name] = vals[at]
        rpf = pf_at[i] + (bf.proof,)
        if i < last:
            i += 1
            rb_at[i], pf_at[i] = rb, rpf
            facts_at[i] = _bucket(index, steps[i], rb)
            pos_at[i] = 0
            continue
        sink = q.sink
        if sink is None:
            yield (TOP, rb, rpf, ctx)
        elif sink(rb, rpf):
            q.stopped = True
            return


def _unique(s: Any, rel: str) -> bool:
    """No two given facts of `rel` have equal values (compared as Python values, which may call a
    symbol and a string equal: then this says False, the safe answer)."""
    facts = s.index.by_relation.get(rel, ())
    return len({bf.fact.slots[IMPLIED] for bf in facts}) == len(facts)


def join_alts(q: Query, plan: JoinPlan, br: Any, p: ast.Pattern, key: tuple, pre: dict, b: dict, pf, ctx, nxt):
    """The states of an SLD call of pattern `p` (variant `key`, caller bindings `b`, proofs `pf`,
    context `ctx`, continuation `nxt`) answered by rule `br` through `plan`: (nxt, bindings, proofs,
    ctx) per row, as the frame evaluation would continue; handed to `q.sink` directly when `nxt` is
    the query's end. A generator: rows are made as they are consumed (lazy, `limit` stops it)."""
    s = q.s
    binder = ordered_binder(p, key, b, s._multislots.get(key[0]), s.plans)
    if binder is None or p.address or binder[0] != len(plan.names):
        return None
    # the rows carry the rule's context (depth, WHY) while its body runs: the same limit applies
    depth = ctx.depth + 1
    if depth > s.config.max_depth:  # named by the call (p, as bound by b), as a frame evaluation names it
        q._depth_error(Ctx(instantiated_text(p, b), br.name, ctx, depth))
    return _rows(q, plan, br, binder, pre, b, pf, ctx, nxt)


def _rows(q: Query, plan: JoinPlan, br: Any, binder: tuple, pre: dict, b: dict, pf, ctx, nxt):
    s = q.s
    index = s.index
    steps = plan.steps
    last = len(steps) - 1
    rel = plan.relation
    rule = br.name
    _, caller_checks, caller_free = binder
    proofs = q.proofs
    sink = q.sink if nxt is TOP and not s.cf_on else None
    row_sink = q.row_sink if sink is not None and not b and not pf else None  # the query's own call
    if row_sink is not None and plan.distinct and q.row_sink_new is not None and q.oracle is None:
        # this rule is the only source of the goal's answers (no given facts of its relation, no
        # question, no other rule) and its rows are distinct: every row is a new answer
        if len(s.rules_for[rel]) == 1 and not s.index.by_relation.get(rel) and rel not in s.kb.askable_specs:
            row_sink = q.row_sink_new
    # the head's values from a row: (values of the head variables bound before the last premise)
    # + (the last premise's fact values), picked by position
    _, arity_last, _, checks_last, free_last = steps[last]
    at_last = dict(free_last)
    outer_names = tuple(n for n in plan.names if n not in at_last)
    width = len(outer_names)
    picks = tuple(outer_names.index(n) if n not in at_last else width + at_last[n] for n in plan.names)
    one = picks[0] if len(picks) == 1 else None
    pick = itemgetter(*picks) if one is None else None
    # iterative nested loops over the premises before the last: level i's facts, bindings, proofs
    facts_at: list = [None] * (last + 1)
    pos_at = [0] * (last + 1)
    rb_at: list = [None] * (last + 1)
    pf_at: list = [None] * (last + 1)
    rb_at[0] = pre
    pf_at[0] = ()
    facts_at[0] = _bucket(index, steps[0], pre)
    i = 0
    n = 0
    while i >= 0:
        rb = rb_at[i]
        if i < last:
            facts = facts_at[i]
            j = pos_at[i]
            if j >= len(facts):
                i -= 1
                continue
            pos_at[i] = j + 1
            n += 1  # outer facts count too: a long join that finds nothing still meets its time limit
            if not n & 1023:
                q.check_time()
            bf = facts[j]
            vals = bf.fact.slots[IMPLIED]
            _, arity, _, checks, free = steps[i]
            if len(vals) != arity or (checks and any(vkey(vals[a]) != vkey(vals[c]) for a, c in checks)):
                continue
            rb = rb.copy()
            for name, at in free:
                rb[name] = vals[at]
            i += 1
            rb_at[i] = rb
            pf_at[i] = pf_at[i - 1] + (bf.proof,) if proofs else ()
            facts_at[i] = _bucket(index, steps[i], rb)
            pos_at[i] = 0
            continue
        # the last premise: one row per fact; conclude the head and bind the caller (as
        # TablesMixin._conclude_sld does for a frame)
        outer = tuple([rb[x] for x in outer_names])
        rpf = pf_at[i]
        if row_sink is not None and not proofs and not caller_checks:  # the query's own call, no HOW
            stop = _rows_to_query(
                q, row_sink, facts_at[i], outer, one, pick, arity_last, checks_last, caller_free, rel, rule, n
            )
            if stop < 0:
                q.stopped = True
                return
            n = stop
            i -= 1
            continue
        for bf in facts_at[i]:
            n += 1  # every candidate fact counts: a last premise that rejects most facts meets the time limit
            if not n & 1023:
                q.check_time()
            vals = bf.fact.slots[IMPLIED]
            if len(vals) != arity_last or (checks_last and any(vkey(vals[a]) != vkey(vals[c]) for a, c in checks_last)):
                continue
            hv = (outer + vals)[one] if one is not None else pick(outer + vals)
            hv = (hv,) if one is not None else hv
            if caller_checks and any(vkey(hv[at]) != k for at, k in caller_checks):
                continue
            f = _new_fact(Fact)
            _set(f, "template", rel)
            _set(f, "slots", {IMPLIED: hv})
            _set(f, "id", None)
            if proofs:
                rb2 = rb.copy()
                for name, at in free_last:
                    rb2[name] = vals[at]
                proof = Proof("rule", f, rule=rule, bindings=rb2, premises=rpf + (bf.proof,))
            else:
                proof = Proof("rule", f, rule=rule, bindings=NO_BINDINGS, premises=())
            if row_sink is not None:
                if row_sink(hv, f, proof, {name: hv[at] for name, at in caller_free}):
                    q.stopped = True
                    return
                continue
            b2 = b.copy()
            for name, at in caller_free:
                b2[name] = hv[at]
            if sink is not None:
                if sink(b2, pf + (proof,)):
                    q.stopped = True
                    return
                continue
            yield (nxt, b2, pf + (proof,), ctx)
        i -= 1


def _rows_to_query(q, row_sink, facts, outer, one, pick, arity, checks, caller_free, rel, rule, n) -> int:
    """The rows of the last premise over `facts` handed straight to the query's collector (`row_sink`,
    `collect.Collector.add_row`) when no HOW is wanted: the loop of `_rows` with nothing per row but the
    answer's fact, its conclusion node, its bindings and the call. Returns the candidate facts counted so far,
    or -1 when the collector reached the query's limit."""
    names = tuple(name for name, _ in caller_free)
    in_order = tuple(at for _, at in caller_free) == tuple(range(len(names)))
    new, put, proof_node, no_bindings, implied = _new_fact, _set, Proof, NO_BINDINGS, IMPLIED
    for bf in facts:
        n += 1  # every candidate fact counts (a premise rejecting most facts still meets the time limit)
        if not n & 1023:
            q.check_time()
        vals = bf.fact.slots[implied]
        if len(vals) != arity or (checks and any(vkey(vals[a]) != vkey(vals[c]) for a, c in checks)):
            continue
        hv = ((outer + vals)[one],) if one is not None else pick(outer + vals)
        f = new(Fact)
        put(f, "template", rel)
        put(f, "slots", {implied: hv})
        put(f, "id", None)
        # Proof("rule", f, rule=rule, bindings=NO_BINDINGS, premises=()), positionally
        proof = proof_node("rule", f, None, rule, no_bindings, ())
        bindings = dict(zip(names, hv)) if in_order else {name: hv[at] for name, at in caller_free}
        if row_sink(hv, f, proof, bindings):
            return -1
    return n


_new_fact = object.__new__
_set = object.__setattr__  # `terms.make_fact` inline: a Fact without re-checking its values


def _bucket(index: Any, step: tuple, rb: dict) -> list:
    """The facts of `step`'s relation agreeing with its constants and its variables bound in `rb`."""
    rel, arity, lookup, _, _ = step
    if not lookup:
        return index.by_relation.get(rel, [])
    wanted: list = [None] * arity
    for at, arg, is_var in lookup:
        if is_var:
            v = rb[arg]
            if type(v) is tuple or isinstance(v, Fact):
                return []
            wanted[at] = vkey(v)
        else:
            wanted[at] = arg
    return index.lookup((rel, "o", tuple(wanted), arity))
