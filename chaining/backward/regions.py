"""Completion and regions of the proof engine: SCC completion of tables, and the barriers of
`not`, `exists`, `forall`, ground calls (`once`) and certainty-factor `or` (`ormax`)."""

from __future__ import annotations

from typing import Any

from . import certainty as cfm
from .errors import BackwardError, NotStratifiedError
from .frames import Barrier, Ctx, Exit, Seq, Table
from .proof import Proof


class RegionsMixin:
    """Part of `engine.Query`: the completion stack and the barrier regions."""

    stack: list[Any]
    comp: list[Any]
    tables: dict
    s: Any

    def _table_done(self, t: Table) -> None:
        """The producers of `t` (and everything above them) are exhausted."""
        if t.dead or t.complete:
            return
        if t.leader >= t.dfn:
            self._complete_from(t.dfn)
        elif t.dfn > 0:
            below = self.comp[t.dfn - 1]
            if t.leader < below.leader:
                below.leader = t.leader

    def _complete_from(self, dfn: int) -> None:
        for x in self.comp[dfn:]:
            if type(x) is Table:
                x.complete = True
                x.consumers = []
        del self.comp[dfn:]

    def _barrier(
        self, kind: str, starts: list, cont: tuple, detail: str = "", alts: tuple | None = None, nctx: Ctx | None = None
    ) -> Barrier:
        dfn = len(self.comp)
        bar = Barrier(kind, dfn, len(self.stack), cont, detail, leader=dfn)
        self.comp.append(bar)
        self.stack.append(bar)
        ctx = nctx or cont[3]
        if alts is not None:  # once: the call's own alternatives, ending at the barrier's exit
            p, key, rules, spec, text = alts
            self.stack.append(self._sld_alts(p, key, rules, spec, text, cont[1], (), ctx, Exit(bar)))
            return bar
        self._push([(Seq(k.ces, k.i, Exit(bar)), b, pf, ctx) for k, b, pf in starts])
        return bar

    def _cut(self, bar: Barrier) -> None:
        """Drop what is left of `bar`'s region: its choice points and its unfinished tables."""
        bar.done = True
        if bar.popped:
            return
        del self.stack[bar.height :]
        for x in self.comp[bar.dfn + 1 :]:
            if type(x) is Table:
                x.dead = True
                if self.tables.get(x.key) is x:
                    del self.tables[x.key]
            else:
                x.done = True
        del self.comp[bar.dfn :]
        bar.popped = True

    def _exit(self, bar: Barrier, b: dict, pf: tuple, ctx: Ctx):
        """A solution reached the exit of `bar`'s region; returns the state to continue with, if any."""
        kind = bar.kind
        if kind == "ormax":
            if bar.done:
                return None
            cf = cfm.conjunction([p.certainty for p in pf if p.certainty is not None])
            k = tuple(sorted((n, repr(v)) for n, v in b.items()))
            old = bar.best.get(k)
            if old is None or cf > old[0]:
                bar.best[k] = (cf, b, pf)
            if bar.popped:  # late solution (the region waited on an unfinished table): pass it on
                nxt, _, cpf, cctx = bar.cont
                return (nxt, b, cpf + pf, cctx)
            return None
        if bar.done:
            return None
        nxt, cb, cpf, cctx = bar.cont
        if kind == "once":
            self._cut(bar)
            return (nxt, b, cpf + pf, cctx)
        if kind == "exists":
            self._cut(bar)
            cf = cfm.conjunction([p.certainty for p in pf if p.certainty is not None]) if self.s.cf_on else None
            return (nxt, cb, cpf + (Proof("exists", premises=list(pf), detail=bar.detail, certainty=cf),), cctx)
        if kind == "not":
            self._cut(bar)
            return None
        if kind == "forall":
            # one instance of the forall's first pattern: check the rest holds for it
            rest = bar.rest
            check = Barrier("forall-check", 0, 0, (None, b, pf, ctx), parent=bar)
            dfn = len(self.comp)
            check.dfn, check.leader, check.height = dfn, dfn, len(self.stack)
            self.comp.append(check)
            self.stack.append(check)
            self._push([(Seq(rest, 0, Exit(check)), b, (), ctx)])
            return None
        if kind == "forall-check":
            parent = bar.parent
            self._cut(bar)
            if parent is not None and not parent.done:
                parent.witnesses.extend(bar.cont[2] + pf)
            return None
        raise BackwardError(f"internal: unknown barrier {kind}")  # pragma: no cover

    def _barrier_done(self, bar: Barrier) -> None:
        """`bar`'s region is exhausted without a cut."""
        if bar.popped:
            return
        bar.popped = True
        settled = bar.leader >= bar.dfn
        if settled:
            self._complete_from(bar.dfn)
        elif bar.dfn > 0:
            below = self.comp[bar.dfn - 1]
            if bar.leader < below.leader:
                below.leader = bar.leader
        nxt, b, pf, ctx = bar.cont
        kind = bar.kind
        cf1 = 1.0 if self.s.cf_on else None
        if kind == "not":
            if not settled:
                waiting = self.comp[bar.leader] if bar.leader < len(self.comp) else None
                raise NotStratifiedError(
                    f"(not {bar.detail}) depends on a goal that is still being proved "
                    f"({waiting.text if isinstance(waiting, Table) else '?'}): negation through recursion "
                    "has no well-defined answer here"
                )
            self._push([(nxt, b, pf + (Proof("not", detail=bar.detail, certainty=cf1),), ctx)])
        elif kind == "forall":
            if not settled:
                raise NotStratifiedError(f"(forall {bar.detail}) over a goal that is still being proved")
            if not bar.done:
                proof = Proof("forall", premises=list(bar.witnesses), detail=bar.detail, certainty=cf1)
                self._push([(nxt, b, pf + (proof,), ctx)])
        elif kind == "forall-check":
            parent = bar.parent
            if not settled:
                raise NotStratifiedError("(forall ...) over a goal that is still being proved")
            if parent is not None and not parent.done:
                self._cut(parent)  # an instance without the rest: the forall fails
        elif kind == "ormax":
            self._push([(nxt, bb, pf + bpf, ctx) for _, bb, bpf in bar.best.values()])
