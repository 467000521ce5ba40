"""Questions of the proof engine: a person is asked at once; questions for a model are collected
while the proof goes on and asked together (one batch), before any completion decision."""

from __future__ import annotations

from typing import Any

from .frames import AskReq, Barrier, Marker
from .matcher import match_list


class QuestionsMixin:
    """Part of `engine.Query`: asking for askable facts."""

    stack: list[Any]
    pending: list[AskReq]
    warnings: list[str]
    s: Any
    ctx: Any
    _add: Any
    _push: Any

    def _must_flush(self) -> bool:
        """Pending questions must be answered before the stack is empty, a table completes, or a region
        decides (`not`, `exists`, `forall`, `or`); a ground call's region (`once`) may end first, as a
        late answer still reaches its exit once, unless a pending question feeds a table."""
        if not self.stack:
            return True
        top = self.stack[-1]
        if type(top) is Marker:
            return True
        if type(top) is Barrier:
            return top.kind != "once" or any(r.table is not None for r in self.pending)
        return False

    async def _flush(self) -> None:
        """Ask every pending question at once: the broker sends them to the model in one batch."""
        import asyncio

        pending, self.pending = self.pending, []
        answers = await asyncio.gather(*(self.s._ask_fact(r.fact, r.spec, r.ctx, self.warnings) for r in pending))
        for req, got in reversed(list(zip(pending, answers))):  # the stack runs the last pushed first
            self._answered(req, *got)

    async def _ask(self, req: AskReq) -> None:
        self.ctx = req.ctx
        got, proof, cf = await self.s._ask_fact(req.fact, req.spec, req.ctx, self.warnings)
        self._answered(req, got, proof, cf)

    def _answered(self, req: AskReq, got, proof, cf) -> None:
        s = self.s
        if got is None or not s._key_matches(req.key, got):
            return
        if req.table is not None:
            self._add(req.table, got, proof, cf, ("asked",))
            return
        ms = s._multislots.get(got.template)
        states = [(req.nxt, b2, req.pf + (proof,), req.ctx) for b2 in match_list(req.p, got, req.b, s.ev, ms, s.plans)]
        self._push(states)
