"""A consultation over one knowledge base: base facts, the askable-answer cache, the provider, `prove`.

The proof engine is `engine.Query` (iterative SLD resolution, SLG tabling for recursive
relations); this module prepares what it reads (indexed base facts, rules by concluded
relation, which relations are tabled) and turns what it finds into `Answer`s.

Certainty factors (when the knowledge base uses them): a given fact has 1.0 (or its
deffacts' `;@cf`), an answer its provider's certainty, a rule's conclusion rule_cf x min of
its premises (premises at or below `cf_threshold` do not conclude, as in EMYCIN), an `(or ...)`
premise the max of its branches, and distinct derivations of one fact combine with
`certainty.combine`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rules import KnowledgeBase, ast
from rules.facts import IMPLIED, Fact, String

from .askable import AskBroker, Provider, answered_fact, question_for
from .calls import CallsMixin, from_vkey
from .check import unknown_in_goal
from .collect import Collector, relaxed_gc
from .engine import Ctx, Oracle, Query, chain_text
from .errors import BackwardError, NotStratifiedError, ProofCancelled, ProofTimeout
from .evaluator import ClipsEvaluator
from .goals import parse_goal
from .index import FactIndex
from .matcher import compile_pattern, multislot_value
from .proof import Proof
from .results import Answer, ProofResult, ProverConfig
from .rulebase import BackwardRule, Head, analyse, premise_relations, strongly_connected
from .terms import fact_key, fact_text, normalise_fact, same, vkey
from .text import goal_variables


class Session(CallsMixin):
    """A consultation over one knowledge base: base facts, askable-answer cache, the provider.

    Args:
        kb: a validated knowledge base (`rules.load_knowledge_base`).
        facts: working-memory facts (Fact or JSON dicts); deffacts facts are added by CLIPS's reset.
        provider: answers askable facts (PersonProvider, ModelProvider, ScriptedProvider) or None.
        models: answers the questions of model-backed relations (`;@model`), all pending ones in one
            `answer_batch` call (`workbench.backward_models.CatalogModels`); None: `provider` answers them.
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
        models: Provider | None = None,
        config: ProverConfig | None = None,
        functions: Mapping[str, Callable] | None = None,
        use_rules: bool = True,
        include_deffacts: bool = True,
        keep_ids: bool = False,
    ):
        self.kb = kb
        self.config = config or ProverConfig()
        self.cancel: Any = None  # the `Cancellation` of the proof running now (`prove(..., cancel=)`)
        self.cf_on = kb.certainty_factors
        self.ev = ClipsEvaluator(kb, functions)
        self.broker = AskBroker(kb, provider, models=models)
        self._multislots = {name: {s for s, d in t.slots.items() if d.multislot} for name, t in kb.templates.items()}
        self.index = FactIndex()
        self.plans: dict = {}  # compiled matching plans of patterns (matcher.compile_pattern)
        facts = list(facts)
        if facts:
            from chaining.forward.base import as_facts  # the shared normaliser of facts given as data

            facts = as_facts(facts)
        given = [self._normalise(f) for f in facts]
        deffacts_cf = self._deffacts_certainty()
        loaded = self.ev.plain_base_facts() if not given and include_deffacts else None
        if loaded is None:  # templates, globals, modules or given facts: CLIPS reads the facts
            loaded = self.ev.base_facts(given, include_deffacts)
        wm = [i for i, (_, source) in enumerate(loaded) if source == "working-memory"]
        if keep_ids and len(wm) == len(given):  # keep the caller's ids (e.g. a forward run's fact ids)
            for i, g in zip(wm, given):
                loaded[i] = (Fact(loaded[i][0].template, loaded[i][0].slots, g.id), "working-memory")
        for f, source in loaded:
            if source == "deffacts" and not include_deffacts:
                continue
            cf = (deffacts_cf.get(fact_key(f), 1.0) if source == "deffacts" else 1.0) if self.cf_on else None
            self.index.add(f, source, cf)
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
            if any(a.head == "bind" for a in br.actions)
        }
        self._addressed = {br.name for br in self.usable if _has_address(br.rule.lhs)}
        self._defaults: dict = {}
        self.tabled = self._tabled_relations()

    def _tabled_relations(self) -> set[str]:
        """Relations evaluated with tables: those on a cycle of the rule graph (a relation's rules
        use, perhaps through others, the relation itself); with certainty factors every derived one."""
        if self.cf_on:
            return set(self.rules_for)
        graph: dict[str, set[str]] = {}
        for rel, pairs in self.rules_for.items():
            uses = graph.setdefault(rel, set())
            for br, _ in pairs:
                uses.update(premise_relations(br.rule.lhs))
        out: set[str] = set()
        for comp in strongly_connected(graph):
            if len(comp) > 1 or any(r in graph.get(r, ()) for r in comp):
                out |= comp
        return out

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
    def base(self) -> dict[str, list[tuple[Fact, str, float | None]]]:
        """Base facts by relation: (fact, source, certainty)."""
        return {rel: [(bf.fact, bf.source, bf.cf) for bf in facts] for rel, facts in self.index.by_relation.items()}

    @property
    def given_facts(self) -> list[Fact]:
        return [bf.fact for facts in self.index.by_relation.values() for bf in facts]

    # ---- public entry points ----------------------------------------------------------------

    async def prove(
        self,
        goal: str,
        *,
        limit: int | None = None,
        on_answer: Callable[[Answer], Any] | None = None,
        keep: bool = True,
        proofs: bool = True,
        cancel: Any = None,
    ) -> ProofResult:
        """Prove `goal` (CLIPS pattern text, one pattern or several as a conjunction).

        Answers are found one at a time (the search stops after `limit`): `on_answer(answer)` is
        called for each as soon as it is found (with certainty factors: at the end, once every
        derivation is combined). A ground single-pattern goal has at most one answer.

        Args:
            goal: e.g. "(ancestor ?x otto)" or "(person (name ?n) (age ?a&:(> ?a 30)))".
            limit: stop after this many answers (None: all answers).
            on_answer: called with each Answer as it is found.
            keep: False to keep no answers in the result (streaming many answers; `count` says how many).
            proofs: False when no HOW is wanted: a rule's conclusion then keeps neither its premises
                nor its bindings (each answer's `proof` is its last step only), saving memory.
            cancel: a `chaining.forward.Cancellation`; its `cancel()`, from any thread, stops the proof
                within 256 resolution steps, or halts the CLIPS evaluation it is in (ProofCancelled).

        Returns:
            ProofResult with answers (bindings of the goal's variables, proofs).

        Raises:
            GoalSyntaxError, DepthLimitError, ProofTimeout, ProofCancelled, NotStratifiedError, AskError.
        """
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be >= 1 or None, got {limit}")
        if cancel is None:
            return await self._prove(goal, limit, on_answer, keep, proofs)
        if cancel.cancelled:
            raise ProofCancelled(f"proof of {goal} cancelled by its caller before it started")
        t0 = time.perf_counter()
        self.cancel = self.ev.cancel = cancel
        cancel.bind(self.ev.halt)  # a cancel() while CLIPS evaluates halts that evaluation
        try:
            return await self._prove(goal, limit, on_answer, keep, proofs)
        except ProofCancelled as exc:
            seconds = time.perf_counter() - t0
            message = f"proof of {goal} cancelled by its caller after {seconds:.3f} s and {exc.steps} steps"
            raise ProofCancelled(message, seconds, exc.steps) from None
        finally:
            cancel.unbind()  # before the evaluator is used again: a late cancel() never halts the next proof
            self.cancel = self.ev.cancel = None

    async def _prove(
        self, goal: str, limit: int | None, on_answer: Callable[[Answer], Any] | None, keep: bool, proofs: bool
    ) -> ProofResult:
        t0 = time.perf_counter()
        ces = parse_goal(goal, self.kb)
        unknown = unknown_in_goal(self.kb, ces, self.index.by_relation)  # reported in warnings (no answers)
        deadline = None if self.config.timeout is None else time.monotonic() + self.config.timeout
        asked_before = len(self.broker.asked)
        model_calls = getattr(self.broker.models, "calls", None)
        calls_before = len(model_calls) if model_calls is not None else 0
        self.ev.deadline = None if self.config.timeout is None else time.perf_counter() + self.config.timeout
        single = len(ces) == 1 and isinstance(ces[0], ast.Pattern) and not ces[0].address
        exhaust_after = False
        if single and not self.cf_on and self._is_ground(self._call_key(ces[0], {})):
            limit = 1  # a ground goal has one answer at most: stop at it
            exhaust_after = True
        simple = single and compile_pattern(ces[0], self._multislots.get(ces[0].template), self.plans) is not None
        c = Collector(goal, goal_variables(ces), single, simple, limit, on_answer, keep, self.cf_on)
        c.proofs = proofs
        warnings: list[str] = [f"unknown relation: {u}" for u in unknown]
        tables = 0
        try:
            with relaxed_gc():
                try:
                    q = Query(self, deadline)
                    stopped = await self._drain(q, ces, goal, c)
                    warnings, tables = warnings + q.warnings, q.n_tables
                except NotStratifiedError:
                    # negation through recursion: answer under the well-founded semantics (wfs)
                    from .wfs import well_founded

                    k_index, u_index = await well_founded(self, deadline)
                    stopped = False
                    for oracle_index, truth in ((u_index, "true"), (k_index, "undefined")):
                        q = Query(self, deadline, Oracle(False, oracle_index))
                        c.truth = truth
                        stopped = await self._drain(q, ces, goal, c)
                        warnings += q.warnings
                        tables += q.n_tables
                        if stopped:
                            break
        except ProofCancelled as exc:  # raised by CLIPS's halt (no step count) or between steps
            raise ProofCancelled(str(exc), steps=exc.steps or q.steps) from None
        except ProofTimeout as exc:
            if str(exc).startswith(f"proof ran past {self.config.timeout} s"):
                raise
            chain = [x.text for x in q.ctx.chain()] if q.ctx is not None else [goal]
            raise ProofTimeout(
                f"proof ran past {self.config.timeout} s while proving {chain[-1]}; "
                f"goal chain: {chain_text(chain)}; CLIPS was evaluating {exc.goal}",
                chain[-1],
            ) from None
        answers, count = c.answers, c.count
        complete = not stopped or exhaust_after
        if self.cf_on:
            for a in answers:  # certainties may have grown after the answer was first found
                a.certainty = a.proof.certainty
            if limit is not None and len(answers) > limit:
                answers, complete = answers[:limit], False
            count = len(answers)  # the answers given (all were collected to combine their certainties)
            if on_answer is not None:
                for a in answers:
                    on_answer(a)
            if not keep:
                answers = []
        asked = self.broker.asked[asked_before:]
        return ProofResult(
            goal,
            answers,
            complete,
            list(self.skipped),
            [{**qq.to_dict(), "answer": aa.text, "certainty": aa.certainty, "source": aa.source} for qq, aa in asked],
            warnings,
            time.perf_counter() - t0,
            tables,
            count,
            list(model_calls[calls_before:]) if model_calls is not None else [],
        )

    async def _drain(self, q: Query, ces: list[ast.CE], goal: str, c: Collector) -> bool:
        """Run query `q` for `ces`, handing each answer to `c`; True when stopped at the limit."""
        q.start(ces, goal)
        q.sink = c.add  # each answer as it is found; True (the limit) stops the query
        # a join row of a one-pattern goal (join.py): the answer straight from the head's values
        q.row_sink = c.add_row if c.single and c.simple and not self.cf_on else None
        q.row_sink_new = c.add_new if q.row_sink is not None and not c.count else None
        q.proofs = c.proofs
        try:
            done = await q.run(None)
        finally:
            q.release()
        return not done

    def prove_sync(self, goal: str, *, limit: int | None = None, **kw: Any) -> ProofResult:
        """`prove` for callers without an event loop. A knowledge base with askable or model-backed
        relations is proved in an event loop (`asyncio.run`: questions are awaited); one without
        never awaits anything, and its proof runs straight through, without importing asyncio or
        starting a loop (start-up of `kb ask`)."""
        coro = self.prove(goal, limit=limit, **kw)
        if self.kb.askable_specs:
            import asyncio

            return asyncio.run(coro)
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        coro.close()  # pragma: no cover - only questions await, and this knowledge base has none
        raise BackwardError("internal: a proof without questions waited on the event loop")

    async def solve(self, ces: list[ast.CE], b: dict, cap: int) -> list[tuple[dict, list[Proof]]]:
        """Up to `cap` solutions (bindings, premise proofs) of the conditional elements `ces` under
        bindings `b` (used by WHY NOT to try a rule's premises one at a time)."""
        from .engine import TOP, Seq

        q = Query(self, None if self.config.timeout is None else time.monotonic() + self.config.timeout)
        q.stack.append(iter([(Seq(list(ces), 0, TOP), dict(b), (), Ctx("premise", None, None, 0))]))
        out: list[tuple[dict, list[Proof]]] = []
        while len(out) < cap:
            done = await q.run(1)
            out.extend((bb, list(pf)) for bb, pf in q.out)
            q.out.clear()
            if done:
                break
        return out[:cap]

    # ---- questions ----------------------------------------------------------------------------

    def _askable_fact(
        self, spec, key: tuple, text: str, warnings: list[str], p: ast.Pattern | None = None, b: dict | None = None
    ) -> Fact | None:
        """The fact a call of an askable relation asks about, or None (not identified, or known).
        Multislots (not in the call key) are read from the call's pattern `p` under bindings `b`."""
        rel = key[0]
        if key[1] == "o":
            if key[3] is None or any(k is None for k in key[2]):
                warnings.append(f"cannot ask {text}: a yes/no question needs every field bound")
                return None
            fact = Fact(rel, {IMPLIED: tuple(from_vkey(k) for k in key[2])})
        else:
            bound = dict(key[2])
            for slot in self._multislots.get(rel, ()):
                if slot in spec.key_slots and p is not None:
                    v = multislot_value(p, b or {}, slot)
                    if v is not None:
                        bound[slot] = vkey(v)
            missing = [s for s in spec.key_slots if s not in bound]
            if missing:
                warnings.append(f"cannot ask {text}: slot(s) {', '.join(missing)} must be bound to ask it")
                return None
            fact = Fact(rel, {s: from_vkey(bound[s]) for s in spec.key_slots})
        for bf in self.index.by_relation.get(rel, ()):
            f = bf.fact
            if spec.ask_slot is None and fact_key(f) == fact_key(fact):
                return None
            if spec.ask_slot is not None and all(
                s in f.slots and same(f.slots[s], fact.slots[s]) for s in spec.key_slots
            ):
                return None  # already known from working memory
        return fact

    async def _ask_fact(self, fact: Fact, spec, ctx: Ctx, warnings: list[str]):
        """Ask (once per session) about `fact`; returns (answered fact or None, its proof, certainty)."""
        chain = ctx.chain()
        if len(chain) > 1 and chain[0].rule is None and chain[1].text == chain[0].text:
            chain = chain[1:]  # a one-pattern query: its goal is the first rule's goal
        why = [c.text + (f" by rule {c.rule}" if c.rule else "") for c in chain] + [fact_text(fact)]
        question = question_for(spec, fact, why)
        if self.broker.provider_for(question) is None and question.key not in self.broker.cache:
            # No one to ask (e.g. over HTTP): the fact is unknown; say so instead of failing the proof.
            warnings.append(f"not asked, no provider: {question.text} {question.fact_text}")
            return None, None, None
        answer = await self.broker.ask(question)
        got = answered_fact(question, answer)
        if got is None:
            return None, None, None
        cf = (answer.certainty if answer.certainty is not None else 1.0) if self.cf_on else None
        proof = Proof("asked", got, answer.source, certainty=cf, detail=f"{question.text} -> {answer.text}")
        return got, proof, cf


def _has_address(ces: list[ast.CE]) -> bool:
    """Whether a rule's premises bind a fact address (`?f <- (...)`), which proofs leave out of bindings."""
    work = list(ces)
    while work:
        ce = work.pop()
        if isinstance(ce, ast.Pattern) and ce.address:
            return True
        if isinstance(ce, ast.Not):
            work.append(ce.ce)
        elif isinstance(ce, (ast.And, ast.Or, ast.Exists, ast.Forall, ast.Logical)):
            work.extend(ce.ces)
    return False
