"""Explanations for both directions, read from recorded traces (never re-derived by guesswork).

- HOW, backward: the proof tree recorded while proving (`chaining.backward.Proof`).
- HOW, forward: the derivation of a fact from a `ForwardResult`'s recorded firings: the firing
  that asserted it (`FactEvent.firing`), that firing's rule and activating fact ids, and so on
  down to given facts (asserted before the first firing, or labelled by `sources`, e.g. a
  model output). `derivation_graph` returns the whole run as a networkx DiGraph.
- WHY: the chain of goals that led to a question (`Question.why`).
- WHY NOT: for a goal that failed (backward) or a fact never derived (forward, matched
  against the final working memory): the rules that could have concluded it and, for each,
  the first premise that failed, with the bindings it was tried under.

Every explanation renders as a rich `Tree` and as JSON (`to_dict`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.text import Text
from rich.tree import Tree

from rules import KnowledgeBase, ast
from rules.facts import IMPLIED, Fact
from rules.printer import ce_text

from .backward.askable import Question
from .backward.goals import parse_goal
from .backward.proof import Proof
from .backward.rulebase import analyse
from .backward.session import Session
from .backward.terms import bindings_json, fact_text, vkey
from .backward.text import instantiated_ce
from .derivation import derivation_label, derivation_tree
from .explain_trace import lost_conclusions, version_at

if TYPE_CHECKING:
    import networkx as nx

# ---- HOW (backward) ------------------------------------------------------------------------------


def how_tree(proof: Proof, title: str | None = None) -> Tree:
    """A rich Tree of a proof: each node one line (fact, rule, test, negation...). Built without recursion
    (an explicit stack), so its depth is limited by the prover's `max_depth` and memory only."""
    root = Tree(Text(title)) if title else Tree(Text(proof.label))
    start = root.add(Text(proof.label)) if title else root
    work: list[tuple[Tree, Proof]] = [(start, proof)]
    while work:
        node, p = work.pop()
        for child in p.premises:  # children added in order; each expanded later from the stack
            work.append((node.add(Text(child.label)), child))
    return root


def how_lines(proof: Proof) -> Iterator[str]:
    """The proof as plain text lines, one per node, with the guides `how_tree` draws ("├── ", "└── ",
    "│   "), never wrapped: for output that is not a terminal, where a deep proof's guides would leave a
    rich Tree no width for its labels. Iterative (depth limited by memory only); the lines are made
    lazily, one node at a time (guides of depth d are O(d) characters each)."""
    yield proof.label
    # (node, the guide prefix of its line, whether it is its parent's last premise)
    work: list[tuple[Proof, str, bool]] = [(c, "", i == len(proof.premises) - 1) for i, c in enumerate(proof.premises)]
    work.reverse()
    while work:
        node, prefix, last = work.pop()
        yield prefix + ("└── " if last else "├── ") + node.label
        inner = prefix + ("    " if last else "│   ")
        n = len(node.premises)
        for i in range(n - 1, -1, -1):
            work.append((node.premises[i], inner, i == n - 1))


def how_json(proof: Proof) -> dict[str, Any]:
    """JSON form of a proof tree (see `Proof.to_dict`)."""
    return proof.to_dict()


# ---- HOW (forward) -------------------------------------------------------------------------------


@dataclass(slots=True)
class Derivation:
    """How a forward-chaining fact came about.

    Attributes:
        fact_id: its id in working memory. fact: the fact as the firing above it matched it (None when
        a later retract or modify ended that version and the run did not record versions,
        `trace_versions`). source: "given", "rule", or a label from `sources` (e.g.
        "model:digits@3f2a"). rule / firing: the rule and the index of the firing that asserted it.
        premises: derivations of the firing's activating facts.
        note: e.g. "modified by its own rule" when a firing re-asserted a fact it matched.
    """

    fact_id: int
    fact: Fact | None
    source: str
    rule: str | None = None
    firing: int | None = None
    premises: list[Derivation] = field(default_factory=list)
    note: str | None = None

    @property
    def label(self) -> str:
        """One line (`chaining.derivation.derivation_label`)."""
        return derivation_label(self.to_dict()).plain

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of every forward derivation (see `chaining.derivation`)."""
        return {
            "fact_id": self.fact_id,
            "fact": fact_text(self.fact) if self.fact else None,
            "source": self.source,
            "rule": self.rule,
            "firing": self.firing,
            "note": self.note,
            "premises": [p.to_dict() for p in self.premises],
        }

    def tree(self) -> Tree:
        """The derivation as a rich Tree (`chaining.derivation.derivation_tree`)."""
        return derivation_tree(self.to_dict())


def forward_derivation(result, fact_id: int, *, sources: Mapping[int, str] | None = None) -> Derivation:
    """The derivation of fact `fact_id` from a `chaining.forward.ForwardResult` (needs traced events).

    Args:
        result: the forward run's result (`EngineConfig.trace_facts=True`, the default).
        fact_id: the fact to explain.
        sources: labels for given facts, e.g. {7: "model:digits@3f2a"} for a model output.

    Raises:
        KeyError: no fact with that id was asserted or given in the run.
    """
    sources = dict(sources or {})
    by_id = {f.id: f for f in result.facts}
    known = set(by_id) | {e.fact for e in result.events}
    if fact_id not in known:
        raise KeyError(f"fact f-{fact_id} is not in the run's working memory or its events")
    asserted_by: dict[int, list[int]] = {}
    for e in result.events:
        if e.kind == "assert" and e.firing is not None:
            asserted_by.setdefault(e.fact, []).append(e.firing)

    def build(fid: int, before: int | None) -> Derivation:
        # `before` strictly decreases down the tree, so a modified fact's versions unwind in order.
        fact = by_id.get(fid)
        later = [k for k in asserted_by.get(fid, []) if before is not None and k >= before]
        note = f"an earlier version of f-{fid}, modified later by firing #{later[0]}" if later else None
        if later or fact is None:  # modified later, or retracted: the version it had then (None: not recorded)
            fact = version_at(getattr(result, "versions", None), fid, before)
        firings = [k for k in asserted_by.get(fid, []) if before is None or k < before]
        if not firings:
            return Derivation(fid, fact, sources.get(fid, "given"), note=note)
        k = firings[-1]
        firing = result.firings[k]
        if (fid, k) in expanded:  # a DAG: each derivation is expanded once, later uses point back
            return Derivation(fid, fact, "rule", firing.rule, k, note=note or "derivation shown above")
        expanded.add((fid, k))
        d = Derivation(fid, fact, "rule", firing.rule, k, note=note)
        d.premises = [build(pid, k) for pid in firing.facts]
        return d

    expanded: set[tuple[int, int]] = set()

    return build(fact_id, None)


def derivation_graph(result, *, sources: Mapping[int, str] | None = None) -> nx.DiGraph:
    """The whole run as a DiGraph: nodes "f-N" (facts) and "r-K" (firings); edges premise -> firing -> conclusion."""
    import networkx as nx  # a second of start-up that HOW and WHY NOT never need

    g = nx.DiGraph()
    sources = dict(sources or {})
    for f in result.facts:
        g.add_node(f"f-{f.id}", kind="fact", fact=fact_text(f), source=sources.get(f.id, "given"))
    for k, firing in enumerate(result.firings):
        g.add_node(f"r-{k}", kind="firing", rule=firing.rule)
        for fid in firing.facts:
            g.add_edge(f"f-{fid}", f"r-{k}")
    for e in result.events:
        if e.kind == "assert" and e.firing is not None:
            node = f"f-{e.fact}"
            if node in g.nodes and g.nodes[node].get("source") == "given":
                g.nodes[node]["source"] = "rule"
            elif node not in g.nodes:
                g.add_node(node, kind="fact", fact=None, source="rule")
            g.add_edge(f"r-{e.firing}", node)
    return g


# ---- WHY ------------------------------------------------------------------------------------------


def why_tree(question: Question) -> Tree:
    """The chain of goals that led to `question`, outermost goal at the root."""
    root = Tree(Text(f"WHY: {question.text}"))
    node = root
    for step in question.why:
        node = node.add(Text(step))
    return root


def why_json(question: Question) -> dict[str, Any]:
    return {"question": question.text, "fact": question.fact_text, "why": list(question.why)}


# ---- WHY NOT -------------------------------------------------------------------------------------


@dataclass(slots=True)
class RuleFailure:
    """Why one rule did not conclude the goal.

    status: "premise-failed" (premise #index, `premise` as tried under `bindings`),
    "head-mismatch" (its conclusion cannot match the goal), "conclusion-differs" (its premises
    hold but the computed conclusion is another fact), "concludes" (it does conclude the goal),
    or "skipped" (not usable backwards; `detail` says why).
    """

    rule: str
    status: str
    index: int | None = None
    premise: str | None = None
    bindings: dict[str, Any] = field(default_factory=dict)
    detail: str | None = None
    answer: str | None = None  # the failing premise is askable: the question and the answer that failed it
    sub: WhyNot | None = None  # the failing premise's own WHY NOT (a derived relation), down to facts and answers

    @property
    def label(self) -> str:
        if self.status == "premise-failed":
            b = " ".join(f"?{k}={v}" for k, v in bindings_json(self.bindings).items())
            out = f"rule {self.rule}: premise {self.index + 1} {self.premise} failed" + (f" (with {b})" if b else "")
            if self.answer:
                out += f": answered {self.answer}"
            return out + (f" in the final working memory ({self.detail})" if self.detail else "")
        if self.status == "skipped":
            return f"rule {self.rule}: not used backwards: {self.detail}"
        if self.status == "concludes":
            return f"rule {self.rule}: concludes it ({self.detail})"
        return f"rule {self.rule}: {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "status": self.status,
            "index": self.index,
            "premise": self.premise,
            "bindings": bindings_json(self.bindings),
            "detail": self.detail,
            "answer": self.answer,
            "because": self.sub.to_dict() if self.sub is not None else None,
        }


@dataclass(slots=True)
class WhyNot:
    """Why `goal` does not hold: whether it holds after all, and each candidate rule's failure."""

    goal: str
    holds: bool
    rules: list[RuleFailure] = field(default_factory=list)
    facts_checked: str = ""
    askable: str | None = None
    pruned: list[str] = field(default_factory=list)  # rules whose conclusion cannot match the goal

    def tree(self) -> Tree:
        """The explanation as a rich Tree; a failing premise's own WHY NOT nests under its rule."""
        root = Tree(Text(f"WHY NOT {self.goal}: " + ("it holds" if self.holds else "no proof")))
        work = [(root, self)]
        while work:
            node, w = work.pop()
            node.add(Text(w.facts_checked))
            if w.askable:
                node.add(Text(w.askable))
            if not w.rules and not w.pruned:
                node.add(Text("no rule concludes facts of this relation"))
            for r in w.rules:
                child = node.add(Text(r.label))
                if r.sub is not None:
                    sub = child.add(Text(f"WHY NOT {r.sub.goal}: " + ("it holds" if r.sub.holds else "no proof")))
                    work.append((sub, r.sub))
            if w.pruned:
                node.add(Text(f"{len(w.pruned)} other rule(s) conclude other facts: {', '.join(w.pruned)}"))
        return root

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "holds": self.holds,
            "facts_checked": self.facts_checked,
            "askable": self.askable,
            "rules": [r.to_dict() for r in self.rules],
            "pruned": list(self.pruned),
        }


async def why_not(session: Session, goal: str, *, cap: int = 200, depth: int = 6) -> WhyNot:
    """Explain why a goal (one pattern) fails backwards: candidate rules and their first failing premise.

    Premises are tried left to right with the session's prover (so askable facts may be asked);
    for each premise the solutions of the earlier ones are kept (at most `cap`). A failing
    premise over a derived relation is explained in turn (its `sub`, with the bindings it was
    tried under), down to given facts and askable answers, `depth` levels at most; a failing
    askable premise names the question and the answer that failed it. Rules whose conclusion
    cannot match the goal are listed in `pruned`, not explained.
    """
    ces = parse_goal(goal, session.kb)
    if len(ces) != 1 or not isinstance(ces[0], ast.Pattern):
        raise ValueError("WHY NOT takes one pattern as its goal")
    p = ces[0]
    result = await session.prove(goal, limit=1)
    rel = p.template.rsplit("::", 1)[-1]
    n_given = session.index.count(rel)
    out = WhyNot(
        goal,
        bool(result.answers),
        facts_checked=f"{n_given} given fact(s) of {rel} in working memory/deffacts; none matches"
        if not result.answers
        else "proved: see HOW",
    )
    if rel in session.kb.askable:
        asked = [f"{qq.fact_text} -> {aa.text}" for qq, aa in session.broker.asked if qq.relation == rel]
        out.askable = f"{rel} is askable; answers so far: {', '.join(asked) if asked else 'none'}"
    _, _, skipped = analyse(session.kb)
    for s in skipped:
        rule = session.kb.rules[s.rule]
        if any(_asserts_relation(a, rel) for a in rule.rhs) or rel in rule.modifies:
            out.rules.append(RuleFailure(s.rule, "skipped", detail=s.reason))
    for br, heads in session.rules_for.get(rel, ()):
        failure = await _rule_failure(session, br, heads, p, cap)
        if failure.status == "head-mismatch":
            out.pruned.append(failure.rule)
            continue
        out.rules.append(failure)
        if failure.status == "premise-failed" and not out.holds:
            await _follow(session, br.rule.lhs[failure.index], failure, cap, depth)
    return out


async def _follow(session: Session, ce: ast.CE, failure: RuleFailure, cap: int, depth: int) -> None:
    """Say why the failing premise `ce` failed: the answer that refused it, or its own WHY NOT."""
    if not isinstance(ce, ast.Pattern):
        return
    rel = ce.template.rsplit("::", 1)[-1]
    text = failure.premise or ""
    if rel in session.kb.askable:
        key = session._call_key(parse_goal(text, session.kb)[0], {})
        for q, a in session.broker.asked:
            if q.relation != rel:
                continue
            if key[1] == "t":
                bound = dict(key[2])
                asked_here = all(s in bound and bound[s] == vkey(v) for s, v in q.fact.slots.items())
            else:
                asked_here = tuple(vkey(v) for v in q.fact.slots.get(IMPLIED, ())) == tuple(key[2])
            if asked_here:
                failure.answer = f"{q.text} -> {a.text} ({a.source})"
                return
    if rel in session.rules_for and depth > 0:
        failure.sub = await why_not(session, text, cap=cap, depth=depth - 1)


def why_not_sync(session: Session, goal: str) -> WhyNot:
    import asyncio

    return asyncio.run(why_not(session, goal))


async def _rule_failure(session: Session, br, heads, goal: ast.Pattern, cap: int) -> RuleFailure:
    key = session._call_key(goal, {})
    pre = session._unify_heads(br, heads, key)
    if pre is None:
        return RuleFailure(
            br.name,
            "head-mismatch",
            detail=f"its conclusion {' '.join(ce_text(_head_pattern(h)) for h in heads)} cannot match",
        )
    frontier = [pre]
    for i, ce in enumerate(br.rule.lhs):
        nxt = []
        for b in frontier:
            for b2, _ in await session.solve([ce], b, cap - len(nxt)):
                nxt.append(b2)
            if len(nxt) >= cap:
                break
        if not nxt:
            b0 = {k: v for k, v in frontier[0].items() if not isinstance(v, Fact)}
            return RuleFailure(br.name, "premise-failed", i, instantiated_ce(ce, frontier[0]), b0)
        frontier = nxt
    produced = []
    for b in frontier:
        try:
            b2 = session._run_actions(br, b)
            for h in heads:
                f = session._instantiate_head(h, b2)
                if session._key_matches(key, f):
                    return RuleFailure(br.name, "concludes", detail=fact_text(f))
                produced.append(fact_text(f))
        except Exception as exc:  # an evaluation error is the reason
            return RuleFailure(br.name, "conclusion-differs", detail=f"its conclusion could not be computed: {exc}")
    return RuleFailure(
        br.name,
        "conclusion-differs",
        detail=f"its premises hold but it concludes {', '.join(produced[:3])}, not the goal",
    )


def _asserts_relation(e: ast.Expr, rel: str) -> bool:
    if isinstance(e, ast.Call):
        if e.head == "assert" and any(isinstance(a, ast.Call) and a.head == rel for a in e.args):
            return True
        return any(_asserts_relation(i, rel) for i in e.items)
    return False


def _head_pattern(h) -> ast.Pattern:
    from rules import parse
    from rules.printer import expr_text

    text = expr_text(h.call) if h.call is not None else f"({h.relation})"
    return parse(f"(defrule x {text} => )").constructs[0].lhs[0]  # type: ignore[union-attr]


def forward_why_not(kb: KnowledgeBase, result, pattern: str) -> WhyNot:
    """WHY NOT for forward chaining: match the rules that assert facts like `pattern` against the
    run's final working memory (`result.facts`) and report each rule's first failing premise.

    The premises are matched against recorded facts only (no rule is run backwards).
    """
    session = Session(kb, facts=result.facts, use_rules=False, include_deffacts=False, keep_ids=True)
    by_rel, _, skipped = analyse(kb)
    ces = parse_goal(pattern, kb)
    if len(ces) != 1 or not isinstance(ces[0], ast.Pattern):
        raise ValueError("WHY NOT takes one pattern")
    p = ces[0]
    rel = p.template.rsplit("::", 1)[-1]
    holds = bool(session.prove_sync(pattern, limit=1).answers)
    out = WhyNot(
        pattern,
        holds,
        facts_checked=f"final working memory: {len(result.facts)} fact(s); "
        + ("a matching fact is there (see HOW)" if holds else "none matches"),
    )
    for s in skipped:
        rule = kb.rules[s.rule]
        if any(_asserts_relation(a, rel) for a in rule.rhs) or rel in rule.modifies:  # as `why_not` does
            out.rules.append(RuleFailure(s.rule, "skipped", detail=s.reason))
    grouped: dict[str, tuple] = {}
    for br, h in by_rel.get(rel, ()):
        grouped.setdefault(br.name, (br, []))[1].append(h)
    import asyncio

    async def run() -> None:
        for br, heads in grouped.values():
            session._rhs_bound.setdefault(br.name, {str(a.args[0].value) for a in br.actions if a.head == "bind"})
            failure = await _rule_failure(session, br, heads, p, 200)
            if failure.status == "head-mismatch":
                out.pruned.append(failure.rule)
            else:
                out.rules.append(failure)

    asyncio.run(run())
    fired = {f.rule for f in result.firings}
    for r in out.rules:
        if not holds and r.status in ("concludes", "premise-failed") and r.rule in fired:
            lost = lost_conclusions(result, r.rule, only_lost=r.status != "concludes")  # which firing took them
            r.detail = f"{r.detail}; {lost}" if r.status == "concludes" else lost
        elif not holds and r.status == "skipped" and r.rule in fired and rel in kb.rules[r.rule].modifies:
            r.detail = (
                r.detail or ""
            ) + f"; it fired and modified {rel} facts (a modified fact's earlier versions are not in working memory)"
    return out


__all__ = [
    "how_lines",
    "how_tree",
    "how_json",
    "Derivation",
    "forward_derivation",
    "derivation_graph",
    "why_tree",
    "why_json",
    "RuleFailure",
    "WhyNot",
    "why_not",
    "why_not_sync",
    "forward_why_not",
]
