"""Goal-driven prover over a knowledge base's AST, with tabling.

Algorithm: SLD resolution, rules used backwards through the facts their right-hand sides
assert, with *linear tabling* (Zhou, Sato & Shen, "Linear tabling strategies and
optimizations", TPLP 2008): every call to a subgoal has a table keyed by its variant (the
relation plus the fields bound to constants). A call whose table is being evaluated further
up the chain (recursion, cycles) consumes the answers found so far, and the topmost such
table (the leader of the strongly connected set) re-runs its rules until no new answer
appears; only then is it complete. This terminates whenever the set of provable facts is
finite. `not` is negation as failure over complete tables (negation through recursion is an
error, NotStratifiedError). `test` and `:`/`=` constraints are evaluated by CLIPS once their
variables are bound. Subgoal tables are evaluated completely; the top-level goal yields its
answers as they are found, so `limit=N` stops the search (and the questions) early.

Certainty factors (when the knowledge base uses them): a given fact has 1.0 (or its
deffacts' `;@cf`), an answer its provider's certainty, a rule's conclusion rule_cf x min of
its premises (premises below `cf_threshold` do not conclude, as in EMYCIN), and distinct
derivations of one fact combine with `certainty.combine`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rules import KnowledgeBase, ast
from rules.facts import IMPLIED, Fact, String
from rules.printer import ce_text, expr_text

from . import certainty as cfm
from .askable import AskBroker, Provider, answered_fact, question_for
from .errors import BackwardError, DepthLimitError, EvaluationError, NotStratifiedError, ProofTimeout
from .evaluator import ClipsEvaluator
from .goals import parse_goal
from .matcher import is_multifield_field, match
from .proof import Proof
from .rulebase import BackwardRule, Head, SkippedRule, analyse
from .terms import Bindings, Value, bindings_json, fact_key, fact_text, normalise_fact, same, vkey


@dataclass(slots=True)
class ProverConfig:
    """Limits of one proof.

    Attributes:
        max_depth: most nested subgoals (tables being evaluated at once) before DepthLimitError.
        timeout: seconds per `prove` call before ProofTimeout (None: no limit).
        cf_threshold: premises with certainty at or below this do not let a rule conclude
            (EMYCIN uses 0.2); used only when certainty factors are on.
    """

    max_depth: int = 200
    timeout: float | None = 30.0
    cf_threshold: float = 0.2

    def __post_init__(self) -> None:
        if not isinstance(self.max_depth, int) or self.max_depth < 1:
            raise ValueError(f"ProverConfig.max_depth must be an int >= 1, got {self.max_depth!r}")
        if self.timeout is not None and not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise ValueError(f"ProverConfig.timeout must be positive seconds or None, got {self.timeout!r}")
        if not 0.0 <= self.cf_threshold < 1.0:
            raise ValueError(f"ProverConfig.cf_threshold must be in [0, 1), got {self.cf_threshold!r}")


@dataclass(slots=True)
class Answer:
    """One answer to a goal: the goal's variable bindings, the fact (single-pattern goals), its proof."""

    bindings: dict[str, Value]
    proof: Proof
    fact: Fact | None = None
    certainty: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "bindings": bindings_json(self.bindings),
            "fact": fact_text(self.fact) if self.fact else None,
            "certainty": self.certainty,
            "proof": self.proof.to_dict(),
        }


@dataclass(slots=True)
class ProofResult:
    """The outcome of `Session.prove`.

    Attributes:
        goal: the goal text. answers: in the order found. complete: True when the search was
        exhausted (False when stopped at `limit`). skipped_rules: rules not usable backwards,
        with reasons. questions: questions asked during this proof, with answers.
        warnings: expressions CLIPS could not evaluate (the premise then failed). seconds: wall time.
    """

    goal: str
    answers: list[Answer]
    complete: bool
    skipped_rules: list[SkippedRule]
    questions: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    tables: int = 0

    def to_dict(self) -> dict[str, Any]:
        """`{"goal", "answers": [{"bindings", "fact", "certainty", "proof"}], "complete", "skipped_rules", ...}`."""
        return {
            "goal": self.goal,
            "answers": [a.to_dict() for a in self.answers],
            "complete": self.complete,
            "skipped_rules": [s.to_dict() for s in self.skipped_rules],
            "questions": self.questions,
            "warnings": self.warnings,
            "seconds": self.seconds,
        }


# ---- tables ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _TAnswer:
    fact: Fact
    proof: Proof
    cf: float | None
    contributions: dict[tuple, float] = field(default_factory=dict)
    gen: int = 0


@dataclass(slots=True, eq=False)
class _Table:
    key: tuple
    relation: str
    text: str
    answers: dict[tuple, _TAnswer] = field(default_factory=dict)
    state: str = "new"  # new | evaluating | incomplete | complete
    depth: int = 0
    leader_depth: int = 0
    recursive: bool = False
    changed: bool = False
    last_pass_start: int | None = None  # answer generation when the last completed pass began


@dataclass(slots=True)
class _Frame:
    goal: str
    rule: str | None = None
    premise: str | None = None


@dataclass(slots=True)
class _Query:
    deadline: float | None
    tables: dict[tuple, _Table] = field(default_factory=dict)
    stack: list[_Table] = field(default_factory=list)
    frames: list[_Frame] = field(default_factory=list)
    touched: float = math.inf
    gen: int = 0  # answers added so far (each answer records the count when it was added)
    warnings: list[str] = field(default_factory=list)
    asked_before: int = 0


class Session:
    """A consultation over one knowledge base: base facts, askable-answer cache, the provider.

    Args:
        kb: a validated knowledge base (`rules.load_knowledge_base`).
        facts: working-memory facts (Fact or JSON dicts); deffacts facts are added by CLIPS's reset.
        provider: answers askable facts (PersonProvider, ModelProvider, ScriptedProvider) or None.
        config: limits (ProverConfig).
        functions: Python functions callable from the rules (registered with CLIPS by name).
        use_rules: False to match against the given facts only (used for forward WHY NOT).

    Raises:
        EvaluationError: a given fact does not fit its template.
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        *,
        facts: Iterable[Fact | Mapping] = (),
        provider: Provider | None = None,
        config: ProverConfig | None = None,
        functions: Mapping[str, Callable] | None = None,
        use_rules: bool = True,
        include_deffacts: bool = True,
        keep_ids: bool = False,
    ):
        from chaining.forward.base import as_facts  # the shared normaliser of facts given as data

        self.kb = kb
        self.config = config or ProverConfig()
        self.cf_on = kb.certainty_factors
        self.ev = ClipsEvaluator(kb, functions)
        self.broker = AskBroker(kb, provider)
        self._multislots = {name: {s for s, d in t.slots.items() if d.multislot} for name, t in kb.templates.items()}
        self.base: dict[str, list[tuple[Fact, str, float | None]]] = {}
        given = [self._normalise(f) for f in as_facts(list(facts))]
        deffacts_cf = self._deffacts_certainty()
        loaded = self.ev.base_facts(given, include_deffacts)
        wm = [i for i, (_, source) in enumerate(loaded) if source == "working-memory"]
        if keep_ids and len(wm) == len(given):  # keep the caller's ids (e.g. a forward run's fact ids)
            for i, g in zip(wm, given):
                loaded[i] = (Fact(loaded[i][0].template, loaded[i][0].slots, g.id), "working-memory")
        for f, source in loaded:
            if source == "deffacts" and not include_deffacts:
                continue
            cf = (deffacts_cf.get(fact_key(f), 1.0) if source == "deffacts" else 1.0) if self.cf_on else None
            self.base.setdefault(f.template, []).append((f, source, cf))
        by_rel, self.usable, self.skipped = analyse(kb) if use_rules else ({}, [], [])
        self.rules_for: dict[str, list[tuple[BackwardRule, list[Head]]]] = {}
        for rel, pairs in by_rel.items():
            grouped: list[tuple[BackwardRule, list[Head]]] = []
            for br, h in pairs:
                if grouped and grouped[-1][0] is br:
                    grouped[-1][1].append(h)
                else:
                    grouped.append((br, [h]))
            self.rules_for[rel] = grouped
        self._rhs_bound = {
            br.name: {
                str(a.args[0].value)
                for a in br.actions
                if a.head == "bind" and a.args and isinstance(a.args[0], ast.Atom)
            }
            for br in self.usable
        }
        self._defaults: dict[tuple[str, str], Value] = {}

    def _normalise(self, f: Fact) -> Fact:
        """JSON strings: a symbol when one token and the slot takes symbols, else a string (as `kb run`)."""
        f = normalise_fact(f)
        t = self.kb.templates.get(f.template)
        if t is None or f.is_ordered:
            return f
        slots = dict(f.slots)
        for name, v in f.slots.items():
            sd = t.slots.get(name)
            if sd is not None and sd.types and not ({"SYMBOL", "LEXEME"} & set(sd.types)) and "STRING" in sd.types:
                slots[name] = (
                    tuple(String(x) if isinstance(x, str) else x for x in v)
                    if isinstance(v, tuple)
                    else (String(v) if isinstance(v, str) else v)
                )
        return Fact(f.template, slots, f.id)

    def _deffacts_certainty(self) -> dict[tuple, float]:
        out: dict[tuple, float] = {}
        if not self.kb.facts_certainty:
            return out
        for name, cf in self.kb.facts_certainty.items():
            d = self.kb.facts[name]
            for call in d.facts:
                try:
                    f = self._instantiate_call(call, {})
                except BackwardError:
                    continue
                out[fact_key(f)] = cf
        return out

    @property
    def given_facts(self) -> list[Fact]:
        return [f for facts in self.base.values() for f, _, _ in facts]

    # ---- public entry points ----------------------------------------------------------------

    async def prove(self, goal: str, *, limit: int | None = None) -> ProofResult:
        """Prove `goal` (CLIPS pattern text, one pattern or several as a conjunction).

        See `_prove`; a time limit reached while CLIPS evaluates an expression is reported in
        the same words as one reached between subgoals (limit, goal, goal chain).
        """
        self._query: _Query | None = None
        try:
            return await self._prove(goal, limit=limit)
        except ProofTimeout as exc:
            q = self._query
            if q is None or str(exc).startswith(f"proof ran past {self.config.timeout} s"):
                raise
            chain = [fr.goal for fr in q.frames] or [goal]
            raise ProofTimeout(
                f"proof ran past {self.config.timeout} s while proving {chain[-1]}; "
                f"goal chain: {' <- '.join(chain)}; CLIPS was evaluating {exc.goal}",
                chain[-1],
            ) from None

    async def _prove(self, goal: str, *, limit: int | None = None) -> ProofResult:
        """Prove `goal` (CLIPS pattern text, one pattern or several as a conjunction).

        Args:
            goal: e.g. "(ancestor ?x otto)" or "(person (name ?n) (age ?a&:(> ?a 30)))".
            limit: stop after this many answers (None: all answers).

        Returns:
            ProofResult with answers (bindings of the goal's variables, proof trees).

        Raises:
            GoalSyntaxError, DepthLimitError, ProofTimeout, NotStratifiedError, AskError.
        """
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be >= 1 or None, got {limit}")
        t0 = time.perf_counter()
        # Each nested subgoal takes about 8 Python frames (async generators); make room for max_depth.
        needed = 12 * self.config.max_depth + 1000
        if sys.getrecursionlimit() < needed:
            sys.setrecursionlimit(needed)
        ces = parse_goal(goal, self.kb)
        q = _Query(
            deadline=None if self.config.timeout is None else time.monotonic() + self.config.timeout,
            asked_before=len(self.broker.asked),
        )
        self._query = q
        self.ev.deadline = None if self.config.timeout is None else time.perf_counter() + self.config.timeout
        goal_vars = _goal_variables(ces)
        answers: list[Answer] = []
        seen: set[tuple] = set()
        complete = True
        final: list[tuple[Answer, _TAnswer | None]] = []
        if len(ces) == 1 and isinstance(ces[0], ast.Pattern) and not ces[0].address:
            p = ces[0]
            key = self._call_key(p, {})
            t = q.tables.setdefault(key, _Table(key, key[0], ce_text(p)))
            gen = self._produce(t, q)
            async with contextlib.aclosing(gen):
                async for ta in gen:
                    for b in match(p, ta.fact, {}, self.ev, self._multislots.get(p.template)):
                        bk = (
                            fact_key(ta.fact),
                            tuple((k, vkey(b[k])) for k in goal_vars if k in b and not isinstance(b[k], Fact)),
                        )
                        if bk in seen:
                            continue
                        seen.add(bk)
                        a = Answer({k: b[k] for k in goal_vars if k in b}, ta.proof, ta.fact, ta.cf)
                        answers.append(a)
                        final.append((a, ta))
                        # With certainty factors every derivation counts, so the search runs to the end.
                        if limit is not None and len(answers) >= limit and not self.cf_on:
                            complete = False
                            break
                    if not complete:
                        break
            for a, ta in final:  # certainties may have grown after the answer was first found
                if ta is not None:
                    a.certainty, a.proof = ta.cf, ta.proof
            if limit is not None and len(answers) > limit:
                answers, complete = answers[:limit], False
        else:
            q.frames.append(_Frame(goal))
            gen = self._ces(ces, 0, {}, q)
            async with contextlib.aclosing(gen):
                async for b, proofs in gen:
                    bk = tuple((k, vkey(b[k])) for k in goal_vars if k in b and not isinstance(b[k], Fact))
                    if bk in seen:
                        continue
                    seen.add(bk)
                    cf = (
                        cfm.conjunction([p.certainty for p in proofs if p.certainty is not None])
                        if self.cf_on
                        else None
                    )
                    proof = Proof("goal", premises=proofs, detail=goal, certainty=cf)
                    answers.append(
                        Answer({k: b[k] for k in goal_vars if k in b and not isinstance(b[k], Fact)}, proof, None, cf)
                    )
                    if limit is not None and len(answers) >= limit:
                        complete = False
                        break
        asked = self.broker.asked[q.asked_before :]
        return ProofResult(
            goal,
            answers,
            complete,
            list(self.skipped),
            [{**qq.to_dict(), "answer": aa.text, "certainty": aa.certainty, "source": aa.source} for qq, aa in asked],
            q.warnings,
            time.perf_counter() - t0,
            len(q.tables),
        )

    def prove_sync(self, goal: str, *, limit: int | None = None) -> ProofResult:
        """`prove` for callers without an event loop (runs one with asyncio.run)."""
        return asyncio.run(self.prove(goal, limit=limit))

    # ---- tables -------------------------------------------------------------------------------

    def _call_key(self, p: ast.Pattern, b: Bindings) -> tuple:
        """Variant key of a call: (relation, kind, bound positions/slots)."""
        rel = p.template.rsplit("::", 1)[-1]
        if p.ordered and not p.fields and self._multislots.get(rel) is not None and self.kb.templates[rel].slots:
            return (rel, "t", ())  # `(person)` matches every person fact
        if p.ordered:
            bound: list = []
            exact = True
            for f in p.fields:
                if is_multifield_field(f):
                    exact = False
                    break
                bound.append(self._bound_value(f, b))
            return (rel, "o", tuple(bound), len(p.fields) if exact else None)
        multis = self._multislots.get(rel, set())
        slots = []
        for sc in p.slots:
            if sc.name in multis or len(sc.fields) != 1:
                continue
            v = self._bound_value(sc.fields[0], b)
            if v is not None:
                slots.append((sc.name, v))
        return (rel, "t", tuple(sorted(slots)))

    @staticmethod
    def _bound_value(f: ast.Field, b: Bindings):
        if isinstance(f, ast.Wildcard):
            return None
        first = f.alternatives[0][0]
        if first.negated:
            return None
        if first.kind == "constant":
            from .matcher import _const

            return vkey(_const(first.value))  # type: ignore[arg-type]
        if first.kind == "variable":
            name = str(first.value.value)  # type: ignore[union-attr]
            if name in b and not isinstance(b[name], (tuple, Fact)):
                return vkey(b[name])
        return None

    @staticmethod
    def _key_matches(key: tuple, f: Fact) -> bool:
        rel, kind = key[0], key[1]
        if f.template != rel:
            return False
        if kind == "o":
            if not f.is_ordered and f.slots:
                return False
            vals = f.slots.get(IMPLIED, ())
            if key[3] is not None and len(vals) != key[3]:
                return False
            if len(vals) < len(key[2]):
                return False
            return all(k is None or vkey(v) == k for k, v in zip(key[2], vals))
        return all(s in f.slots and vkey(f.slots[s]) == k for s, k in key[2])

    def _check_limits(self, q: _Query, goal: str) -> None:
        if q.deadline is not None and time.monotonic() > q.deadline:
            raise ProofTimeout(
                f"proof ran past {self.config.timeout} s while proving {goal}; "
                f"goal chain: {' <- '.join(fr.goal for fr in q.frames)}",
                goal,
            )

    async def _call(self, p: ast.Pattern, b: Bindings, q: _Query) -> list[_TAnswer]:
        key = self._call_key(p, b)
        t = q.tables.get(key)
        if t is not None and t.state == "complete":
            return list(t.answers.values())
        if t is not None and t.state == "evaluating":
            t.recursive = True
            for s in q.stack[t.depth + 1 :]:
                s.leader_depth = min(s.leader_depth, t.depth)
            q.touched = min(q.touched, t.depth)
            return list(t.answers.values())
        text = _instantiated_text(p, b)
        if len(q.stack) >= self.config.max_depth:
            chain = [s.text for s in q.stack] + [text]
            raise DepthLimitError(
                f"goal depth limit {self.config.max_depth} exceeded proving {text}; "
                f"chain (outermost first): {' -> '.join(chain[:5])} ... {' -> '.join(chain[-3:])}",
                chain,
            )
        if t is None:
            t = q.tables[key] = _Table(key, key[0], text)
        async for _ in self._produce(t, q):
            pass
        if t.state == "complete" or t.leader_depth < len(q.stack):
            pass
        return list(t.answers.values())

    async def _produce(self, t: _Table, q: _Query) -> AsyncIterator[_TAnswer]:
        """Evaluate table `t` to its fixpoint, yielding each new answer as it is found."""
        t.state = "evaluating"
        t.depth = len(q.stack)
        t.leader_depth = t.depth
        q.stack.append(t)
        finished = saturated = False
        # A ground call (every field bound) has at most one answer; once found, nothing is left to
        # search (without certainty factors), so the remaining rules, and their questions, are skipped.
        ground = not self.cf_on and self._is_ground(t.key)
        saturated = ground and bool(t.answers)
        try:
            while not saturated:
                self._check_limits(q, t.text)
                t.changed = False
                t.recursive = False
                start = q.gen
                async with contextlib.aclosing(self._pass(t, q, t.last_pass_start)) as answers:
                    async for a in answers:
                        yield a
                        if ground:
                            saturated = True
                            break
                if saturated:
                    break
                t.last_pass_start = start
                if not (t.recursive and t.changed):
                    break
            finished = True
        finally:
            q.stack.pop()
            if saturated or (finished and t.leader_depth >= t.depth):
                t.state = "complete"
            else:
                t.state = "incomplete"
            if q.stack and t.leader_depth < q.stack[-1].leader_depth:
                q.stack[-1].leader_depth = t.leader_depth

    def _is_ground(self, key: tuple) -> bool:
        if key[1] == "o":
            return key[3] is not None and all(k is not None for k in key[2])
        t = self.kb.templates.get(key[0])
        if t is None or self._multislots.get(key[0]):
            return False
        return {s for s, _ in key[2]} == set(t.slots)

    def _add(
        self, t: _Table, fact: Fact, proof: Proof, cf: float | None, signature: tuple, q: _Query
    ) -> _TAnswer | None:
        """Record an answer; returns it when new (also marks the table changed when a certainty grows)."""
        k = fact_key(fact)
        ta = t.answers.get(k)
        if ta is None:
            q.gen += 1
            proof.gen = q.gen
            ta = _TAnswer(fact, proof, cf, {signature: cf} if cf is not None else {}, q.gen)
            t.answers[k] = ta
            t.changed = True
            return ta
        if cf is not None and ta.contributions.get(signature) != cf:
            is_new = signature not in ta.contributions
            ta.contributions[signature] = cf
            if is_new:
                _record_derivation(ta, proof)
            new_cf = cfm.combine_all(ta.contributions.values())
            if ta.cf is None or abs(new_cf - ta.cf) > 1e-12:
                ta.cf = new_cf
                ta.proof.certainty = new_cf
                t.changed = True
        return None

    async def _pass(self, t: _Table, q: _Query, cutoff: int | None) -> AsyncIterator[_TAnswer]:
        """One pass over the table's sources. `cutoff`: answers older than this were all combined in the
        previous completed pass, so a derivation from old answers only is skipped (semi-naive evaluation)."""
        if self.cf_on:
            cutoff = None  # certainties of old answers may have changed: recombine everything
        rel = t.relation
        for f, source, cf in self.base.get(rel, ()):
            if self._key_matches(t.key, f):
                new = self._add(t, f, Proof("fact", f, source, certainty=cf, fact_id=f.id), cf, ("given", f.id), q)
                if new is not None:
                    yield new
        spec = self.kb.askable_specs.get(rel)
        if spec is not None:
            async for new in self._ask(t, spec, q):
                yield new
        for br, heads in self.rules_for.get(rel, ()):
            self._check_limits(q, t.text)
            pre = self._unify_heads(br, heads, t.key)
            if pre is None:
                continue
            q.frames.append(_Frame(t.text, br.name))
            try:
                async for b, proofs in self._ces(br.rule.lhs, 0, pre, q, cutoff, True):
                    if cutoff is not None and all(p.gen < cutoff for p in proofs):
                        continue  # derived in the previous pass already
                    for new in self._conclude(t, br, heads, b, proofs, q):
                        yield new
            finally:
                q.frames.pop()

    def _conclude(
        self, t: _Table, br: BackwardRule, heads: list[Head], b: Bindings, proofs: list[Proof], q: _Query
    ) -> list[_TAnswer]:
        out: list[_TAnswer] = []
        try:
            b = self._run_actions(br, b)
            facts = [self._instantiate_head(h, b) for h in heads]
        except EvaluationError as exc:
            q.warnings.append(f"rule {br.name}: {exc}")
            return out
        cf = None
        if self.cf_on:
            premise_cf = cfm.conjunction([p.certainty for p in proofs if p.certainty is not None])
            if premise_cf <= self.config.cf_threshold:
                return out
            cf = cfm.rule_conclusion(br.certainty, premise_cf)
        shown = None
        for f in facts:
            if not self._key_matches(t.key, f):
                continue
            if not self.cf_on and fact_key(f) in t.answers:
                continue  # already known: without certainty factors a second derivation adds nothing
            if self.cf_on and _mentions(proofs, fact_key(f)):
                continue  # a derivation through itself is not new evidence
            sig = (br.name, tuple(fact_key(p.fact) if p.fact is not None else (p.kind, p.detail) for p in proofs))
            if shown is None:
                shown = {k: v for k, v in b.items() if not isinstance(v, Fact)}
            proof = Proof("rule", f, rule=br.name, bindings=shown, premises=proofs, certainty=cf)
            new = self._add(t, f, proof, cf, sig, q)
            if new is not None:
                out.append(new)
        return out

    async def _ask(self, t: _Table, spec, q: _Query) -> AsyncIterator[_TAnswer]:
        """Ask for the askable fact the call identifies (identifying slots bound), once per session."""
        rel = t.relation
        key = t.key
        if key[1] == "o":
            if key[3] is None or any(k is None for k in key[2]):
                q.warnings.append(f"cannot ask {t.text}: a yes/no question needs every field bound")
                return
            values = tuple(_from_vkey(k) for k in key[2])
            fact = Fact(rel, {IMPLIED: values})
        else:
            bound = dict(key[2])
            missing = [s for s in spec.key_slots if s not in bound]
            if missing:
                q.warnings.append(f"cannot ask {t.text}: slot(s) {', '.join(missing)} must be bound to ask it")
                return
            fact = Fact(rel, {s: _from_vkey(bound[s]) for s in spec.key_slots})
        for f, _, _ in self.base.get(rel, ()):
            if spec.ask_slot is None and fact_key(f) == fact_key(fact):
                return
            if spec.ask_slot is not None and all(
                s in f.slots and same(f.slots[s], fact.slots[s]) for s in spec.key_slots
            ):
                return  # already known from working memory
        why = [f"{fr.goal}" + (f" by rule {fr.rule}" if fr.rule else "") for fr in q.frames] + [fact_text(fact)]
        question = question_for(spec, fact, why)
        if self.broker.provider is None and question.key not in self.broker.cache:
            # No one to ask (e.g. over HTTP): the fact is unknown; say so instead of failing the proof.
            q.warnings.append(f"not asked, no provider: {question.text} {question.fact_text}")
            return
        answer = await self.broker.ask(question)
        got = answered_fact(question, answer)
        if got is None:
            return
        cf = (answer.certainty if answer.certainty is not None else 1.0) if self.cf_on else None
        proof = Proof("asked", got, answer.source, certainty=cf, detail=f"{question.text} -> {answer.text}")
        if self._key_matches(key, got):
            new = self._add(t, got, proof, cf, ("asked",), q)
            if new is not None:
                yield new

    # ---- rules ------------------------------------------------------------------------------

    def _unify_heads(self, br: BackwardRule, heads: list[Head], key: tuple) -> Bindings | None:
        """Bindings that make some head fit the call (None: no head can); pre-binds head variables."""
        rhs_bound = self._rhs_bound.get(br.name, set())
        best: Bindings | None = None
        for h in heads:
            b: Bindings | None = {}
            if key[1] == "o":
                if not h.ordered:
                    continue
                has_multi = any(
                    isinstance(e, ast.Atom) and e.kind == "mf_variable" or isinstance(e, ast.Call) for e in h.fields
                )
                if key[3] is not None and not has_multi and len(h.fields) != key[3]:
                    continue
                if has_multi:
                    pairs: list = []
                    for e, k in zip(h.fields, key[2]):
                        if isinstance(e, ast.Atom) and e.kind == "mf_variable" or isinstance(e, ast.Call):
                            break
                        pairs.append((e, k))
                else:
                    pairs = list(zip(h.fields, key[2]))
            else:
                if h.ordered:
                    continue
                pairs = [(h.slots[s][0], k) for s, k in key[2] if s in h.slots and len(h.slots[s]) == 1]
            for e, k in pairs:
                if k is None or b is None:
                    continue
                if isinstance(e, ast.Atom) and e.kind in ("symbol", "string", "integer", "float"):
                    from .matcher import _const

                    if vkey(_const(e)) != k:
                        b = None
                elif isinstance(e, ast.Atom) and e.kind == "variable" and str(e.value) not in rhs_bound:
                    name = str(e.value)
                    v = _from_vkey(k)
                    if name in b and not same(b[name], v):
                        b = None
                    else:
                        b[name] = v
            if b is not None:
                if len(heads) == 1:
                    return b
                best = {} if best is None else best  # several heads: bind nothing, filter afterwards
        return best

    def _run_actions(self, br: BackwardRule, b: Bindings) -> Bindings:
        b = dict(b)
        for a in br.actions:
            if a.head == "bind":
                target = a.args[0]
                if isinstance(target, ast.Atom) and target.kind == "global":
                    continue
                values = [self.ev.eval(x, b) for x in a.args[1:]]
                name = str(target.value)  # type: ignore[union-attr]
                if len(values) == 1:
                    b[name] = values[0]
                else:
                    b[name] = tuple(v for x in values for v in (x if isinstance(x, tuple) else (x,)))
        return b

    def _value(self, e: ast.Expr, b: Bindings) -> Value:
        if isinstance(e, ast.Atom) and e.kind in ("variable", "mf_variable"):
            name = str(e.value)
            if name not in b:
                raise EvaluationError(f"variable ?{name} is not bound")
            v = b[name]
            if isinstance(v, Fact):
                raise EvaluationError(f"fact address ?{name} cannot be a field value here")
            return v
        return self.ev.eval(e, b)

    def _instantiate_head(self, h: Head, b: Bindings) -> Fact:
        if h.ordered:
            vals: list = []
            for e in h.fields:
                v = self._value(e, b)
                vals.extend(v if isinstance(v, tuple) else (v,))
            return Fact(h.relation, {IMPLIED: tuple(vals)})
        t = self.kb.templates[h.relation]
        slots: dict[str, Value] = {}
        for name, exprs in h.slots.items():
            vals = []
            for e in exprs:
                v = self._value(e, b)
                vals.extend(v if isinstance(v, tuple) else (v,))
            if t.slots[name].multislot:
                slots[name] = tuple(vals)
            else:
                if len(vals) != 1:
                    raise EvaluationError(f"slot {name} of {h.relation} got {len(vals)} values")
                slots[name] = vals[0]
        for name, sd in t.slots.items():
            if name not in slots:
                if sd.default_dynamic:
                    slots[name] = self.ev.eval_text(f"(deftemplate-slot-default-value {h.relation} {name})")
                else:
                    k = (h.relation, name)
                    if k not in self._defaults:
                        self._defaults[k] = self.ev.eval_text(f"(deftemplate-slot-default-value {h.relation} {name})")
                    slots[name] = self._defaults[k]
        return Fact(h.relation, {n: slots[n] for n in t.slots})

    def _instantiate_call(self, call: ast.Call, b: Bindings) -> Fact:
        rel = str(call.head).rsplit("::", 1)[-1]
        t = self.kb.templates.get(rel)
        if t is not None and t.slots:
            h = Head(rel, False, slots={s.head: list(s.args) for s in call.args if isinstance(s, ast.Call) and s.head})
        else:
            h = Head(rel, True, fields=list(call.args))
        return self._instantiate_head(h, b)

    # ---- conditional elements ---------------------------------------------------------------

    async def _ces(
        self, ces: list[ast.CE], i: int, b: Bindings, q: _Query, cutoff: int | None = None, all_old: bool = False
    ) -> AsyncIterator[tuple[Bindings, list[Proof]]]:
        """Solutions of ces[i:]. With `cutoff` and `all_old` (every earlier premise used an answer
        older than cutoff), the last premise only needs answers at or after cutoff."""
        if i == len(ces):
            yield b, []
            return
        last_new_only = cutoff is not None and all_old and i == len(ces) - 1
        async for b1, p1 in self._ce(ces[i], b, q, cutoff if last_new_only else None):
            old = cutoff is not None and all_old and all(p.gen < cutoff for p in p1)
            async for b2, p2 in self._ces(ces, i + 1, b1, q, cutoff, old):
                yield b2, p1 + p2

    async def _first(self, ce: ast.CE, b: Bindings, q: _Query) -> tuple[tuple[Bindings, list[Proof]] | None, bool]:
        """The first solution of `ce` (or None) and whether an unfinished ancestor table was consumed."""
        before = q.touched
        q.touched = math.inf
        found = None
        gen = self._ce(ce, b, q)
        try:
            async with contextlib.aclosing(gen):
                async for sol in gen:
                    found = sol
                    break
        finally:
            touched = q.touched
            q.touched = min(before, touched)
        return found, touched < len(q.stack)

    async def _ce(
        self, ce: ast.CE, b: Bindings, q: _Query, new_since: int | None = None
    ) -> AsyncIterator[tuple[Bindings, list[Proof]]]:
        """Solutions of one conditional element; `new_since`: only pattern answers added at or after it."""
        if isinstance(ce, ast.Pattern):
            answers = await self._call(ce, b, q)
            if new_since is not None:
                answers = [ta for ta in answers if ta.gen >= new_since]
            ms = self._multislots.get(ce.template.rsplit("::", 1)[-1])
            for ta in answers:
                try:
                    matches = list(match(ce, ta.fact, b, self.ev, ms))
                except EvaluationError as exc:
                    q.warnings.append(f"{ce_text(ce)}: {exc}")
                    continue
                for b2 in matches:
                    if ce.address:
                        b2 = {**b2, ce.address: ta.fact}
                    yield b2, [ta.proof]
        elif isinstance(ce, ast.Test):
            try:
                ok = self.ev.truth(ce.call, b)
            except EvaluationError as exc:
                q.warnings.append(f"(test {expr_text(ce.call)}): {exc}")
                ok = False
            if ok:
                yield b, [Proof("test", detail=_instantiated_expr(ce.call, b), certainty=1.0 if self.cf_on else None)]
        elif isinstance(ce, ast.Not):
            found, touched = await self._first(ce.ce, b, q)
            if found is None:
                if touched:
                    raise NotStratifiedError(
                        f"(not {ce_text(ce.ce)}) depends on a goal that is still being proved "
                        f"({q.stack[-1].text if q.stack else '?'}): negation through recursion "
                        "has no well-defined answer here"
                    )
                yield b, [Proof("not", detail=_instantiated_ce(ce.ce, b), certainty=1.0 if self.cf_on else None)]
        elif isinstance(ce, (ast.And, ast.Logical)):
            async for sol in self._ces(ce.ces, 0, b, q):
                yield sol
        elif isinstance(ce, ast.Or):
            for sub in ce.ces:
                async for sol in self._ce(sub, b, q):
                    yield sol
        elif isinstance(ce, ast.Exists):
            found, _ = await self._first(ast.And(ce.ces), b, q)
            if found is not None:
                cf = cfm.conjunction([p.certainty for p in found[1] if p.certainty is not None]) if self.cf_on else None
                yield (
                    b,
                    [
                        Proof(
                            "exists",
                            premises=found[1],
                            detail=" ".join(_instantiated_ce(c, b) for c in ce.ces),
                            certainty=cf,
                            gen=max([p.gen for p in found[1]], default=q.gen),
                        )
                    ],
                )
        elif isinstance(ce, ast.Forall):
            first, rest = ce.ces[0], ce.ces[1:]
            before = q.touched
            q.touched = math.inf
            witnesses: list[Proof] = []
            ok = True
            try:
                sols = [s async for s in self._ce(first, b, q)]
                for b1, p1 in sols:
                    found, _ = await self._first(ast.And(rest), b1, q)
                    if found is None:
                        ok = False
                        break
                    witnesses += p1 + found[1]
            finally:
                touched = q.touched
                q.touched = min(before, touched)
            if touched < len(q.stack):
                raise NotStratifiedError(f"(forall ...) over a goal that is still being proved: {ce_text(ce)}")
            if ok:
                yield (
                    b,
                    [
                        Proof(
                            "forall",
                            premises=witnesses,
                            detail=" ".join(_instantiated_ce(c, b) for c in ce.ces),
                            certainty=1.0 if self.cf_on else None,
                        )
                    ],
                )
        else:  # pragma: no cover - the parser produces no other CE
            raise BackwardError(f"unsupported conditional element {ce!r}")


# ---- helpers -------------------------------------------------------------------------------------


def _record_derivation(ta: _TAnswer, proof: Proof) -> None:
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
            node.gen,
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


def _from_vkey(k: tuple) -> Value:
    from rules.facts import String, Symbol

    kind, v = k
    if kind == "y":
        return Symbol(v)
    if kind == "s":
        return String(v)
    if kind == "m":
        return tuple(_from_vkey(x) for x in v)
    return v


def _mentions(proofs: list[Proof], key: tuple) -> bool:
    for p in proofs:
        if p.fact is not None and fact_key(p.fact) == key:
            return True
        if _mentions(p.premises, key):
            return True
    return False


def _goal_variables(ces: list[ast.CE]) -> list[str]:
    out: list[str] = []

    def expr(e: ast.Expr) -> None:
        if isinstance(e, ast.Atom) and e.kind in ("variable", "mf_variable") and str(e.value) not in out:
            out.append(str(e.value))

    def ce(c: ast.CE) -> None:
        if isinstance(c, ast.Pattern):
            if c.address and c.address not in out:
                out.append(c.address)
            fields = c.fields if c.ordered else [f for s in c.slots for f in s.fields]
            for f in fields:
                if isinstance(f, ast.FieldConstraint):
                    t = f.alternatives[0][0]
                    if t.kind in ("variable", "mf_variable") and not t.negated:
                        expr(t.value)
        elif isinstance(c, (ast.And, ast.Or, ast.Logical)):
            for x in c.ces:
                ce(x)

    for c in ces:
        ce(c)
    return out


def _instantiated_expr(e: ast.Expr, b: Bindings) -> str:
    from .terms import show

    if isinstance(e, ast.Atom):
        if e.kind in ("variable", "mf_variable") and str(e.value) in b and not isinstance(b[str(e.value)], Fact):
            return show(b[str(e.value)])
        return expr_text(e)
    return "(" + " ".join(_instantiated_expr(i, b) for i in e.items) + ")"


def _instantiated_field(f: ast.Field, b: Bindings) -> str:
    from rules.printer import field_text

    if isinstance(f, ast.FieldConstraint) and len(f.alternatives) == 1 and len(f.alternatives[0]) == 1:
        t = f.alternatives[0][0]
        if t.kind in ("variable", "mf_variable", "constant") and not t.negated:
            return _instantiated_expr(t.value, b)
    return field_text(f)


def _instantiated_text(p: ast.Pattern, b: Bindings) -> str:
    """A pattern with its bound variables replaced by their values, e.g. `(parent tom ?y)`."""
    if p.ordered:
        return "(" + " ".join([p.template, *(_instantiated_field(f, b) for f in p.fields)]) + ")"
    return (
        "("
        + " ".join(
            [
                p.template,
                *("(" + " ".join([s.name, *(_instantiated_field(f, b) for f in s.fields)]) + ")" for s in p.slots),
            ]
        )
        + ")"
    )


def _instantiated_ce(ce: ast.CE, b: Bindings) -> str:
    if isinstance(ce, ast.Pattern):
        return _instantiated_text(ce, b)
    if isinstance(ce, ast.Test):
        return f"(test {_instantiated_expr(ce.call, b)})"
    if isinstance(ce, ast.Not):
        return f"(not {_instantiated_ce(ce.ce, b)})"
    return ce_text(ce)
