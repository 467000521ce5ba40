"""The iterative proof engine: SLD resolution with SLG tabling for recursive relations.

No Python recursion follows the user's program: the goals still to prove are a linked list of
continuation frames (`Seq`, `Ret`, `Exit`, `Top`) and the alternatives not yet tried are a
stack of iterators (choice points), both on the heap; nesting is limited by
`ProverConfig.max_depth` and memory.

- Non-recursive relations are proved by SLD resolution (Prolog's depth-first, left-to-right
  order: given facts, then the askable question, then the rules in file order), looking base
  facts up through argument indexes (`index.FactIndex`). A ground call of a derived relation
  stops at its first proof (a cut), so a consultation asks only what it needs.
- Relations on a cycle of the rule graph are tabled (SLG resolution, Chen & Warren, JACM 1996,
  with batched scheduling as in XSB): a call's table collects its answers; a call that finds
  the table of a variant being evaluated becomes a consumer and receives every answer as it
  is added, so answers flow to the caller as they are found and a ground goal over an
  infinite relation returns at once. Completion is by strongly connected components: each
  table and each negation sits on a completion stack, and a table whose evaluation consumed an
  older, unfinished table joins that table's component (leader); a component is complete when
  the choice points above its leader are exhausted.
- `not`, `exists` and `forall` evaluate their patterns in a region of the choice-point stack
  behind a barrier; the first proof cuts the region (its unfinished tables are dropped). A
  negation over a goal whose component is not complete when its region is exhausted is
  negation through recursion (NotStratifiedError).
- With certainty factors, every derived relation is tabled and every derivation counts:
  answers combine their derivations (EMYCIN), and an answer whose certainty changes is
  delivered again to its consumers.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rules import ast
from rules.facts import IMPLIED
from rules.printer import ce_text, expr_text

from .asking import QuestionsMixin
from .errors import BackwardError, DepthLimitError, EvaluationError, ProofCancelled, ProofTimeout
from .frames import (
    TOP,
    AskReq,
    Barrier,
    Ctx,
    Exit,
    Marker,
    Oracle,
    Ret,
    Seq,
    Table,
    Top,
    chain_text,
)
from .join import join_alts, join_plan, query_rows
from .matcher import match_list, ordered_binder
from .proof import Proof
from .regions import RegionsMixin
from .tables import TablesMixin
from .text import instantiated_ce, instantiated_expr, instantiated_text

if TYPE_CHECKING:
    from .session import Session

__all__ = ["Query", "Ctx", "Oracle", "Seq", "TOP", "chain_text"]


# ---- one query ----------------------------------------------------------------------------------


class Query(RegionsMixin, QuestionsMixin, TablesMixin):
    """The state of one `Session.prove`: choice points, tables, completion stack, answers found."""

    def __init__(self, session: Session, deadline: float | None, oracle: Oracle | None = None):
        self.s = session
        self.deadline = deadline
        self.cancel = session.cancel  # a `Cancellation` of the proof, read with the clock (`check_time`)
        self.oracle = oracle
        self.stack: list[Any] = []
        self.tables: dict[tuple, Table] = {}
        self.comp: list[Table | Barrier] = []
        self.out: list[tuple[dict, tuple]] = []
        self.warnings: list[str] = []
        self.ctx: Ctx | None = None  # context of the state being run (for error messages)
        self.steps = 0
        self.sink: Any = None  # called with each answer instead of collecting it in `out`
        self.row_sink: Any = None  # `collect.Collector.add_row`: a join's rows at the query's end (join.py)
        self.row_sink_new: Any = None  # `collect.Collector.add_new`: rows known to be new answers (join.py)
        self.n_tables = 0  # tables created (counted by `release`)
        self.pending: list[AskReq] = []  # questions for a model, asked together (`_flush`)
        self.batched = session.broker.batched  # spec -> True: questions for a model, collected and asked together
        self.proofs = True  # False: rule conclusions keep no premises or bindings (no HOW wanted)
        self._interned: dict[tuple, tuple] = {}
        self.stopped = False

    # -- running -------------------------------------------------------------------------------

    def start(self, ces: list[ast.CE], goal: str) -> None:
        root = Ctx(goal, None, None, 0)
        self.ctx = root  # a query answered by one join runs before any state: its time limit names the goal
        rows = query_rows(self, ces, root)  # a conjunction of base relations: one join (join.py)
        self.stack.append(rows if rows is not None else iter([(Seq(ces, 0, TOP), {}, (), root)]))

    async def run(self, want: int | None = None) -> bool:
        """Run until `want` new answers are in `self.out` (None: to the end), or until `self.sink`,
        called with each answer (bindings, proofs) instead, returns True. Returns True when the
        search is exhausted."""
        stack = self.stack
        while stack or self.pending:
            if self.stopped or (want is not None and len(self.out) >= want):
                return False
            if self.pending and self._must_flush():
                await self._flush()  # questions to a model, asked together before any completion decision
                continue
            top = stack[-1]
            t = type(top)
            if t is Marker:
                stack.pop()
                self._table_done(top.table)
                continue
            if t is Barrier:
                stack.pop()
                self._barrier_done(top)
                continue
            st = next(top, None)
            if st is None:
                stack.pop()
                continue
            self.steps += 1
            if not self.steps & 255:
                self.check_time()
            if type(st) is AskReq:
                if self.batched(st.spec):
                    self.pending.append(st)  # go on with the other alternatives; asked in one batch
                else:
                    await self._ask(st)  # a person is asked at once, in the order the proof needs
                continue
            self.ctx = st[3]
            self._step(*st)
        return not self.stopped  # a join may stop at the limit as its iterator ends (join.py)

    def release(self) -> None:
        """Drop the choice points and tables (they form reference cycles: a table's consumers continue
        into its own producers), so that the query's memory is freed at once, without a full collection."""
        self.n_tables = len(self.tables)
        for t in self.tables.values():
            t.consumers = []
        self.stack.clear()
        self.comp.clear()
        self.pending.clear()
        self.tables.clear()

    def check_time(self) -> None:
        """Stop the proof if its caller cancelled it (ProofCancelled) or its deadline passed (ProofTimeout).
        Called every 256 resolution steps (and every 1,024 facts a join or a match scans), so a cancel is
        seen within that many steps and costs nothing per step."""
        cancel = self.cancel
        if cancel is not None and cancel.cancelled:
            raise ProofCancelled("proof cancelled by its caller", steps=self.steps)
        if self.deadline is not None and time.monotonic() > self.deadline:
            goal = self.ctx.text if self.ctx is not None else "?"
            chain = [c.text for c in self.ctx.chain()] if self.ctx is not None else [goal]
            raise ProofTimeout(
                f"proof ran past {self.s.config.timeout} s while proving {goal}; goal chain: {chain_text(chain)}"
                + self._cause(),
                goal,
            )

    def _cause(self) -> str:
        """Why a proof may run long: the table with the most answers (an infinite relation?), the depth."""
        if not self.tables:
            depth = self.ctx.depth if self.ctx is not None else 0
            return f"; {self.steps} steps, subgoal depth {depth}" if depth > 1000 else ""
        t = max(self.tables.values(), key=lambda x: len(x.answers))
        return f"; {len(self.tables)} subgoal table(s), the largest {t.text} with {len(t.answers)} answer(s)" + (
            " so far (infinitely many? ask for fewer answers: limit / --limit N)" if not t.complete else ""
        )

    def _push(self, states: list) -> None:
        if states:
            self.stack.append(iter(states))

    # -- one state -----------------------------------------------------------------------------

    def _step(self, k: Any, b: dict, pf: tuple, ctx: Ctx) -> None:
        s = self.s
        cf_on = s.cf_on
        while True:
            tk = type(k)
            if tk is Seq:
                ces = k.ces
                i = k.i
                if i == len(ces):
                    k = k.nxt
                    continue
                ce = ces[i]
                nxt = Seq(ces, i + 1, k.nxt) if i + 1 < len(ces) else k.nxt
                tc = type(ce)
                if tc is ast.Pattern:
                    self._call(ce, b, pf, ctx, nxt)
                    return
                if tc is ast.Test:
                    try:
                        ok = s.ev.truth(ce.call, b)
                    except EvaluationError as exc:
                        self.warnings.append(f"(test {expr_text(ce.call)}): {exc}")
                        ok = False
                    if not ok:
                        return
                    pf = pf + (Proof("test", detail=instantiated_expr(ce.call, b), certainty=1.0 if cf_on else None),)
                    k = nxt
                    continue
                if tc is ast.And or tc is ast.Logical:
                    k = Seq(ce.ces, 0, nxt)
                    continue
                if tc is ast.Or:
                    if cf_on:
                        self._barrier("ormax", [(Seq([sub], 0, None), b, ()) for sub in ce.ces], (nxt, b, pf, ctx))
                    else:
                        self._push([(Seq([sub], 0, nxt), b, pf, ctx) for sub in ce.ces])
                    return
                if tc is ast.Not:
                    detail = instantiated_ce(ce.ce, b)
                    oracle = self.oracle
                    if oracle is None:
                        self._barrier("not", [(Seq([ce.ce], 0, None), b, ())], (nxt, b, pf, ctx), detail)
                    elif not oracle.all_true:  # well-founded iteration: derived facts come from the oracle
                        nctx = Ctx(ctx.text, ctx.rule, ctx, ctx.depth, True)
                        self._barrier("not", [(Seq([ce.ce], 0, None), b, ())], (nxt, b, pf, ctx), detail, nctx=nctx)
                    return
                if tc is ast.Exists:
                    detail = " ".join(instantiated_ce(c, b) for c in ce.ces)
                    self._barrier("exists", [(Seq(ce.ces, 0, None), b, ())], (nxt, b, pf, ctx), detail)
                    return
                if tc is ast.Forall:
                    detail = " ".join(instantiated_ce(c, b) for c in ce.ces)
                    bar = self._barrier("forall", [(Seq(ce.ces[:1], 0, None), b, ())], (nxt, b, pf, ctx), detail)
                    bar.rest = ce.ces[1:]
                    return
                raise BackwardError(f"unsupported conditional element {ce_text(ce)}")
            if tk is Ret:
                states = self._conclude(k, b, pf)
                if not states:
                    return
                if len(states) > 1:
                    self._push(states)
                    return
                k, b, pf, ctx = states[0]
                continue
            if tk is Exit:
                nxt_state = self._exit(k.barrier, b, pf, ctx)
                if nxt_state is None:
                    return
                k, b, pf, ctx = nxt_state
                continue
            if tk is Top:
                if self.sink is None:
                    self.out.append((b, pf))
                elif self.sink(b, pf):
                    self.stopped = True
                return
            raise BackwardError(f"internal: unknown frame {k!r}")  # pragma: no cover

    # -- calls ---------------------------------------------------------------------------------

    def _call(self, p: ast.Pattern, b: dict, pf: tuple, ctx: Ctx, nxt: Any) -> None:
        s = self.s
        rel = p.template.rsplit("::", 1)[-1]
        key = s._call_key(p, b)
        if ctx.neg and rel in s.rules_for:  # inside a negation, well-founded iteration: the oracle's facts
            facts = self.oracle.index.lookup(key)  # type: ignore[union-attr]
            if facts:
                self.stack.append(self._match_base(p, key, facts, b, pf, ctx, nxt))
            return
        if rel in s.tabled:
            self._call_tabled(p, key, b, pf, ctx, nxt)
            return
        rules = s.rules_for.get(rel)
        spec = s.kb.askable_specs.get(rel)
        if not rules and spec is None:
            facts = s.index.lookup(key)
            if facts:
                self.stack.append(self._match_base(p, key, facts, b, pf, ctx, nxt))
            return
        text = instantiated_text(p, b)
        if not s.cf_on and s._is_ground(key):
            # a ground call has at most one answer: stop at its first proof (questions included)
            self._barrier("once", [(None, b, ())], (nxt, b, pf, ctx), text, alts=(p, key, rules, spec, text))
            return
        self.stack.append(self._sld_alts(p, key, rules, spec, text, b, pf, ctx, nxt))

    def _match_base(self, p, key, facts, b, pf, ctx, nxt):
        """Alternatives from base facts `facts` (from `s.index.lookup(key)` or the oracle's index, so
        they agree with the call's bound fields): a simple ordered pattern binds its free variables
        straight from each fact's values (one dict per fact), any other goes through `match_list`."""
        s = self.s
        ms = s._multislots.get(key[0])
        binder = ordered_binder(p, key, b, ms, s.plans)
        if binder is not None:
            n, _, free = binder
            addr = p.address
            for bf in facts:
                vals = bf.fact.slots.get(IMPLIED)
                if vals is None:  # a template fact under an ordered pattern: the general matcher
                    for b2 in self._match_one(p, bf.fact, b, ms):
                        yield (nxt, b2, pf + (bf.proof,), ctx)
                    continue
                if len(vals) != n:
                    continue
                b2 = b.copy()
                for name, pos in free:
                    b2[name] = vals[pos]
                if addr:
                    b2[addr] = bf.fact
                yield (nxt, b2, pf + (bf.proof,), ctx)
            return
        n = 0
        for bf in facts:  # the index gave the facts agreeing with the bound fields; matching does the rest
            n += 1  # facts the matcher rejects yield no state: count them for the time limit
            if not n & 1023:
                self.check_time()
            try:
                for b2 in match_list(p, bf.fact, b, s.ev, ms, s.plans):
                    if p.address:
                        b2 = {**b2, p.address: bf.fact}
                    yield (nxt, b2, pf + (bf.proof,), ctx)
            except EvaluationError as exc:
                self.warnings.append(f"{ce_text(p)}: {exc}")

    def _match_one(self, p, fact, b, ms) -> list:
        try:
            got = match_list(p, fact, b, self.s.ev, ms, self.s.plans)
        except EvaluationError as exc:
            self.warnings.append(f"{ce_text(p)}: {exc}")
            return []
        return [{**b2, p.address: fact} for b2 in got] if p.address else got

    def _sld_alts(self, p, key, rules, spec, text, b, pf, ctx, nxt):
        """Alternatives of an SLD call: matching given facts, the question, then each rule whose head fits."""
        s = self.s
        yield from self._match_base(p, key, s.index.lookup(key), b, pf, ctx, nxt)
        if spec is not None:
            fact = s._askable_fact(spec, key, text, self.warnings, p, b)
            if fact is not None:
                yield AskReq(fact, spec, text, p, key, b, pf, ctx, nxt, None)
        for br, heads in rules or ():
            pre = s._unify_heads(br, heads, key)
            if pre is None:
                continue
            plan = join_plan(self, br, heads, pre)
            rows = join_alts(self, plan, br, p, key, pre, b, pf, ctx, nxt) if plan is not None else None
            if rows is not None:  # a body of base relations: evaluated as one join (join.py)
                yield from rows
                if self.stopped:
                    return
                continue
            depth = ctx.depth + 1
            c2 = Ctx(text, br.name, ctx, depth)
            if depth > s.config.max_depth:
                self._depth_error(c2)
            yield (Seq(br.rule.lhs, 0, Ret(br, heads, p, key, b, pf, ctx, nxt, None)), pre, (), c2)

    def _depth_error(self, c: Ctx) -> None:
        chain = [x.text for x in c.chain()[1:]] or [c.text]
        lim = self.s.config.max_depth
        raise DepthLimitError(
            f"goal depth limit {lim} exceeded proving {c.text}; "
            f"chain (outermost first): "
            + (" -> ".join(chain) if len(chain) <= 8 else f"{' -> '.join(chain[:5])} ... {' -> '.join(chain[-3:])}"),
            chain,
        )

    def _call_tabled(self, p, key, b, pf, ctx, nxt) -> None:
        s = self.s
        t = self.tables.get(key)
        if t is not None and t.complete:
            self.stack.append(self._match_answers(p, t.answers, len(t.answers), b, pf, ctx, nxt, key))
            return
        if t is not None:
            t.consumers.append((p, b, pf, ctx, nxt, self._consumer_binder(p, key, b)))
            top = self.comp[-1]
            if t.dfn < top.leader:
                top.leader = t.dfn
            n = len(t.answers)
            if n:
                self.stack.append(self._match_answers(p, t.answers, n, b, pf, ctx, nxt, key))
            return
        text = instantiated_text(p, b)
        depth = ctx.depth + 1
        tctx = Ctx(text, None, ctx, depth)
        if depth > s.config.max_depth:
            self._depth_error(tctx)
        dfn = len(self.comp)
        t = Table(key, text, dfn, tctx, leader=dfn)
        self.tables[key] = t
        self.comp.append(t)
        t.consumers.append((p, b, pf, ctx, nxt, self._consumer_binder(p, key, b)))
        self.stack.append(Marker(t))
        self.stack.append(self._producers(t, p))
        for bf in s.index.lookup(key):
            if s._key_matches(key, bf.fact):
                self._add(t, bf.fact, bf.proof, bf.cf, ("given", bf.fact.id))

    def _consumer_binder(self, p: ast.Pattern, key: tuple, b: dict):
        """(arity, free) for a consumer of the table of `key` whose pattern is simple and ordered
        (`matcher.ordered_binder`: the table's answers agree with the call's bound fields), else None."""
        s = self.s
        binder = ordered_binder(p, key, b, s._multislots.get(key[0]), s.plans)
        return None if binder is None or p.address else (binder[0], binder[2])

    def _producers(self, t: Table, p: ast.Pattern):
        s = self.s
        rel = t.key[0]
        spec = s.kb.askable_specs.get(rel)
        if spec is not None:
            fact = s._askable_fact(spec, t.key, t.text, self.warnings)
            if fact is not None:
                yield AskReq(fact, spec, t.text, p, t.key, None, (), t.ctx, None, t)
        for br, heads in s.rules_for.get(rel, ()):
            if t.dead:
                return
            pre = s._unify_heads(br, heads, t.key)
            if pre is None:
                continue
            c2 = Ctx(t.text, br.name, t.ctx.parent, t.ctx.depth, t.ctx.neg)
            yield (Seq(br.rule.lhs, 0, Ret(br, heads, p, t.key, None, (), None, None, t)), pre, (), c2)

    def _match_answers(self, p, answers, n, b, pf, ctx, nxt, key=None):
        """Alternatives from the first `n` answers of a table (of the call with variant `key`, so
        they agree with its bound fields): as `_match_base`, a simple ordered pattern binds its free
        variables straight from each answer's values."""
        s = self.s
        ms = s._multislots.get(p.template.rsplit("::", 1)[-1])
        binder = ordered_binder(p, key, b, ms, s.plans) if key is not None else None
        if binder is not None:
            arity, _, free = binder
            addr = p.address
            for i in range(n):
                ta = answers[i]
                vals = ta.fact.slots.get(IMPLIED)
                if vals is None:
                    for b2 in self._match_one(p, ta.fact, b, ms):
                        yield (nxt, b2, pf + (ta.proof,), ctx)
                    continue
                if len(vals) != arity:
                    continue
                b2 = b.copy()
                for name, pos in free:
                    b2[name] = vals[pos]
                if addr:
                    b2[addr] = ta.fact
                yield (nxt, b2, pf + (ta.proof,), ctx)
            return
        for i in range(n):
            ta = answers[i]
            try:
                for b2 in match_list(p, ta.fact, b, s.ev, ms, s.plans):
                    if p.address:
                        b2 = {**b2, p.address: ta.fact}
                    yield (nxt, b2, pf + (ta.proof,), ctx)
            except EvaluationError as exc:
                self.warnings.append(f"{ce_text(p)}: {exc}")
