"""Tables' answers and rule conclusions of the proof engine (`engine.Query`): adding an answer to a
table and handing it to the table's consumers (`Deliver`), and concluding a rule's heads once its
premises hold (into the caller's continuation, SLD, or into a table, SLG)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rules.facts import IMPLIED, Fact, Symbol
from rules.printer import ce_text

from . import certainty as cfm
from .errors import EvaluationError
from .frames import Ret, Table, TAnswer, mentions, record_derivation
from .matcher import match_list, ordered_binder
from .proof import NO_BINDINGS, Proof
from .terms import fact_key, make_fact, vkey

if TYPE_CHECKING:
    from .engine import Query


def table_key(vals: tuple, keys: list) -> tuple:
    """A table's key for an ordered answer with values `vals` and their typed keys `keys`: `vals`
    itself when every value is a symbol (the common case; the fact already holds that tuple, and
    symbols equal as strings are the same symbol), else the tuple of typed keys. The two kinds never
    compare equal (typed keys are tuples), and neither equals a `fact_key` (its first item is the
    relation's name; a table holds one relation)."""
    for v, k in zip(vals, keys):
        if k[0] != "y" or not isinstance(v, str):
            return tuple(keys)
    return vals


class TablesMixin:
    """Part of `engine.Query`: table answers and conclusions."""

    s: Any
    stack: list[Any]
    warnings: list[str]
    proofs: bool
    _interned: dict

    def _add(
        self, t: Table, fact: Fact, proof: Proof, cf: float | None, signature: tuple, k: tuple | None = None
    ) -> None:
        """Record an answer of table `t` (`k`: its fact_key, when known); a new answer (or, with
        certainty factors, a changed certainty) is delivered to every consumer registered so far."""
        if t.dead:
            return
        if k is None:
            k = self._tkey(fact)
        ta = t.by_key.get(k)
        if ta is None and cf is None and not self.s.cf_on:
            # without certainty factors an answer is its fact and proof only: the proof node stands for
            # it (`Proof.proof` is itself), one object less per answer (a large table's memory)
            t.by_key[k] = proof
            t.answers.append(proof)
            self.stack.append(Deliver(self, proof, t.consumers))
            return
        if ta is None:
            ta = TAnswer(fact, proof, cf, {signature: cf} if cf is not None else None)
            t.by_key[k] = ta
            t.answers.append(ta)
            self.stack.append(Deliver(self, ta, t.consumers))
            return
        if cf is None or ta.contributions.get(signature) == cf:
            return
        is_new = signature not in ta.contributions
        ta.contributions[signature] = cf
        if is_new:
            record_derivation(ta, proof)
        new_cf = cfm.combine_all(ta.contributions.values())
        if ta.cf is None or abs(new_cf - ta.cf) > 1e-12:
            ta.cf = new_cf
            ta.proof.certainty = new_cf
            self.stack.append(Deliver(self, ta, t.consumers))

    def _tkey(self, f: Fact) -> tuple:
        """A table's key for an answer: `fact_key` (certainty factors compare it with proofs' facts), or for
        ordered facts a smaller key: the tuple of one shared typed key per value (never equal to a
        `fact_key`, whose first item is the relation's name)."""
        slots = f.slots
        vals = slots.get(IMPLIED)
        if vals is None or len(slots) != 1 or self.s.cf_on:
            return fact_key(f)
        interned = self._interned
        out = []
        for v in vals:
            tv = (type(v), v)
            k = interned.get(tv)
            if k is None:
                k = interned[tv] = vkey(v)
            out.append(k)
        return table_key(vals, out)

    def _conclude_tabled(self, r: Ret, t: Table, b: dict, pf: tuple) -> bool:
        """The common case of a tabled conclusion, without building a fact for a derivation the table
        already has: an ordered head of plain variables, no certainty factors. Returns False when the
        head is not of that kind (`_conclude` then does the general work)."""
        s = self.s
        h = r.heads[0]
        got = s.plans.get(id(h))
        names = got[1] if got is not None and got[0] is h else s._head_variables(h)
        if not names:
            return False
        try:
            vals = tuple([b[n] for n in names])
        except KeyError:
            return False
        fk = None
        for v in vals:
            if type(v) is not Symbol:
                break
        else:  # every value a symbol (the common case): the key is `vals` itself (`table_key`)
            if t.dead or vals in t.by_key:
                return True  # a derivation of an answer the table has: nothing new
            fk = vals
            ks = [("y", v) for v in vals]  # their `vkey`s
        if fk is None:
            interned = self._interned
            ks = []
            for v in vals:
                tv0 = type(v)
                if tv0 is tuple or tv0 is Fact:  # a multifield spliced in, or a fact address
                    return False
                tv = (tv0, v)
                k = interned.get(tv)
                if k is None:
                    k = interned[tv] = vkey(v)
                ks.append(k)
            fk = table_key(vals, ks)  # as `_tkey` keys an ordered answer
            if t.dead or fk in t.by_key:
                return True  # a derivation of an answer the table has: nothing new
        key = r.key
        if key[0] != h.relation or key[1] != "o":
            return False
        bound = key[2]
        if (key[3] is not None and key[3] != len(ks)) or len(ks) < len(bound):
            return True
        for i, k in enumerate(bound):
            if k is not None and k != ks[i]:
                return True  # does not fit the call
        f = make_fact(h.relation, {IMPLIED: vals})
        br = r.br
        if self.proofs:
            shown = {k: v for k, v in b.items() if not isinstance(v, Fact)} if br.name in s._addressed else b
            proof = Proof("rule", f, rule=br.name, bindings=shown, premises=pf)
        else:
            proof = Proof("rule", f, rule=br.name, bindings=NO_BINDINGS, premises=())
        self._add(t, f, proof, None, (), fk)
        return True

    def _sld_binder(self, r: Ret) -> tuple | bool:
        """For an SLD conclusion of `r` (one ordered head of plain variables, no actions, no certainty
        factors, a simple ordered caller pattern): (relation, head variables, checks, free) as
        `matcher.ordered_binder` gives them for the caller; False when `_conclude` does the general work."""
        s = self.s
        br = r.br
        if s.cf_on or len(r.heads) != 1 or br.name in s._rhs_bound or r.p.address:
            return False
        h = r.heads[0]
        names = s._head_variables(h)
        if not names or h.relation != r.key[0]:
            return False
        binder = ordered_binder(r.p, r.key, r.b, s._multislots.get(h.relation), s.plans)
        if binder is None or binder[0] != len(names):
            return False
        return (h.relation, names, binder[1], binder[2])

    def _conclude_sld(self, r: Ret, fast: tuple, b: dict, pf: tuple) -> list | None:
        """The common SLD conclusion (see `_sld_binder`): the head's values bind the caller's variables
        directly, without building a pattern match. None when a value is a multifield or a fact address
        (the general path decides)."""
        rel, names, checks, free = fast
        try:
            vals = tuple([b[n] for n in names])
        except KeyError:
            return None
        for v in vals:
            tv = type(v)
            if tv is tuple or tv is Fact:
                return None
        for pos, k in checks:  # the caller's constants and bound variables
            if vkey(vals[pos]) != k:
                return []
        f = make_fact(rel, {IMPLIED: vals})
        br = r.br
        if self.proofs:
            shown = {k: v for k, v in b.items() if not isinstance(v, Fact)} if br.name in self.s._addressed else b
            proof = Proof("rule", f, rule=br.name, bindings=shown, premises=pf)
        else:  # the caller wants no proofs: keep the conclusion only
            proof = Proof("rule", f, rule=br.name, bindings=NO_BINDINGS, premises=())
        b2 = r.b.copy()
        for name, pos in free:
            b2[name] = vals[pos]
        return [(r.nxt, b2, r.pf + (proof,), r.ctx)]

    def _conclude(self, r: Ret, b: dict, pf: tuple) -> list:
        s = self.s
        br = r.br
        t = r.table
        if t is not None and not s.cf_on and len(r.heads) == 1 and br.name not in s._rhs_bound:
            done = self._conclude_tabled(r, t, b, pf)
            if done:
                return []
        if t is None:
            fast = r.fast
            if fast is None:
                fast = r.fast = self._sld_binder(r)
            if fast:
                got = self._conclude_sld(r, fast, b, pf)
                if got is not None:
                    return got
        try:
            if br.name in s._rhs_bound:
                b = s._run_actions(br, b)
            facts = [s._instantiate_head(h, b) for h in r.heads]
        except EvaluationError as exc:
            self.warnings.append(f"rule {br.name}: {exc}")
            return []
        cf = None
        if s.cf_on:
            premise_cf = cfm.conjunction([p.certainty for p in pf if p.certainty is not None])
            if premise_cf <= s.config.cf_threshold:
                return []
            cf = cfm.rule_conclusion(br.certainty, premise_cf)
        shown = None
        out: list = []
        for f in facts:
            if t is not None:
                if t.dead or not s._key_matches(r.key, f):
                    continue
                fk = self._tkey(f)
                if not s.cf_on and fk in t.by_key:
                    continue
                if s.cf_on and mentions(pf, fk):
                    continue  # a derivation through itself is not new evidence
            if shown is None:
                shown = {k: v for k, v in b.items() if not isinstance(v, Fact)} if br.name in s._addressed else b
            if self.proofs:
                proof = Proof("rule", f, rule=br.name, bindings=shown, premises=pf, certainty=cf)  # type: ignore[arg-type]
            else:  # the caller wants no proofs: keep the conclusion only (a large query's memory)
                proof = Proof("rule", f, rule=br.name, bindings=NO_BINDINGS, premises=(), certainty=cf)
            if t is not None:
                sig = (
                    (br.name, tuple(fact_key(p.fact) if p.fact is not None else (p.kind, p.detail) for p in pf))
                    if s.cf_on
                    else ()
                )
                self._add(t, f, proof, cf, sig, fk)
                continue
            p = r.p
            try:
                for b2 in match_list(p, f, r.b, s.ev, s._multislots.get(f.template), s.plans):
                    if p.address:
                        b2 = {**b2, p.address: f}
                    out.append((r.nxt, b2, r.pf + (proof,), r.ctx))
            except EvaluationError as exc:
                self.warnings.append(f"{ce_text(p)}: {exc}")
        return out


class Deliver:
    """Hands a new table answer to the consumers its table had when the answer was added (consumers
    are only ever appended, so that is a prefix of the list). An iterator on the engine's stack: one
    small object per answer where a generator kept a frame (a left-recursive chain of 10,000 nodes
    holds 10,000 of them at once)."""

    __slots__ = ("q", "ta", "consumers", "n", "i", "ready")

    def __init__(self, q: Query, ta: TAnswer | Proof, consumers: list[tuple]):
        self.q, self.ta, self.consumers, self.n, self.i, self.ready = q, ta, consumers, len(consumers), 0, None

    def __iter__(self) -> Deliver:
        return self

    def __next__(self) -> tuple:
        ready = self.ready
        while True:
            if ready:
                return ready.pop()
            if self.i >= self.n:
                raise StopIteration
            p, b, pf, ctx, nxt, binder = self.consumers[self.i]
            self.i += 1
            q, ta = self.q, self.ta
            if binder is not None:  # a simple ordered pattern: its free variables bound straight from the answer
                vals = ta.fact.slots.get(IMPLIED)
                if vals is not None:
                    if len(vals) != binder[0]:
                        continue
                    b2 = b.copy()
                    for name, pos in binder[1]:
                        b2[name] = vals[pos]
                    return (nxt, b2, pf + (ta.proof,), ctx)
            s = q.s
            try:
                got = match_list(p, ta.fact, b, s.ev, s._multislots.get(p.template.rsplit("::", 1)[-1]), s.plans)
            except EvaluationError as exc:
                q.warnings.append(f"{ce_text(p)}: {exc}")
                continue
            if not got:
                continue
            pf2 = pf + (ta.proof,)
            if p.address:
                got = [{**b2, p.address: ta.fact} for b2 in got]
            if len(got) == 1:
                return (nxt, got[0], pf2, ctx)
            ready = self.ready = [(nxt, b2, pf2, ctx) for b2 in reversed(got)]  # popped in match order
