"""Which rules can be used backwards, and what each concludes.

A rule is used backwards through the facts its right-hand side asserts at top level: each
`(assert ...)` is a conclusion (a head). `bind` actions before an assert are evaluated after
the left-hand side is proved; other actions (printout, ...) are not executed. Rules are
skipped, with a reason, when they assert nothing, only modify or retract, or assert only
inside control flow (`if`, `while`, loops), whose outcome a proof cannot promise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rules import KnowledgeBase, ast
from rules.validate import bare

_CONTROL = {
    "if",
    "while",
    "loop-for-count",
    "progn$",
    "foreach",
    "switch",
    "do-for-fact",
    "do-for-all-facts",
    "delayed-do-for-all-facts",
    "progn",
}


@dataclass(slots=True)
class Head:
    """One asserted fact of a rule: `(relation expr...)` (ordered) or `(template (slot expr...)...)`."""

    relation: str
    ordered: bool
    fields: list[ast.Expr] = field(default_factory=list)  # ordered facts
    slots: dict[str, list[ast.Expr]] = field(default_factory=dict)  # template facts
    call: ast.Call | None = None


@dataclass(slots=True)
class BackwardRule:
    """A rule usable backwards: its LHS, the RHS actions up to its last assert, and its heads."""

    rule: ast.RuleDef
    heads: list[Head]
    actions: list[ast.Call]
    certainty: float = 1.0
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or bare(self.rule.name)  # the knowledge base's key: MODULE::name when shared


@dataclass(slots=True, frozen=True)
class SkippedRule:
    rule: str
    reason: str

    def to_dict(self) -> dict:
        return {"rule": self.rule, "reason": self.reason}


def _contains_assert(e: ast.Expr) -> str | None:
    if isinstance(e, ast.Call):
        if e.head in ("assert", "duplicate"):
            return e.head
        for i in e.items:
            found = _contains_assert(i)
            if found:
                return found
    return None


def _uses_fact_address(e: ast.Expr, addresses: set[str]) -> str | None:
    if isinstance(e, ast.Atom):
        return str(e.value) if e.kind == "variable" and str(e.value) in addresses else None
    for i in e.items:
        found = _uses_fact_address(i, addresses)
        if found:
            return found
    return None


def _addresses(ces: list[ast.CE]) -> set[str]:
    out: set[str] = set()
    for ce in ces:
        if isinstance(ce, ast.Pattern) and ce.address:
            out.add(ce.address)
        elif isinstance(ce, ast.Not):
            out |= _addresses([ce.ce])
        elif isinstance(ce, (ast.And, ast.Or, ast.Exists, ast.Forall, ast.Logical)):
            out |= _addresses(ce.ces)
    return out


def premise_relations(ces: list[ast.CE]) -> set[str]:
    """Relations the conditional elements read (patterns anywhere inside not/and/or/exists/forall)."""
    out: set[str] = set()
    work = list(ces)
    while work:
        ce = work.pop()
        if isinstance(ce, ast.Pattern):
            out.add(ce.template.rsplit("::", 1)[-1])
        elif isinstance(ce, ast.Not):
            work.append(ce.ce)
        elif isinstance(ce, (ast.And, ast.Or, ast.Exists, ast.Forall, ast.Logical)):
            work.extend(ce.ces)
    return out


def analyse(
    kb: KnowledgeBase,
) -> tuple[dict[str, list[tuple[BackwardRule, Head]]], list[BackwardRule], list[SkippedRule]]:
    """Index rules by the relations they conclude.

    Returns (relation -> [(rule, head)] in rule order, usable rules, skipped rules with reasons).
    """
    by_relation: dict[str, list[tuple[BackwardRule, Head]]] = {}
    usable: list[BackwardRule] = []
    skipped: list[SkippedRule] = []
    for name, rule in kb.rules.items():  # `name`: bare, or MODULE::name when rules of two modules share it
        heads: list[Head] = []
        actions: list[ast.Call] = []
        reason = None
        addresses = _addresses(rule.lhs)
        for action in rule.rhs:
            if not isinstance(action, ast.Call):
                continue
            head = action.head
            if head == "assert":
                for f in action.args:
                    if not isinstance(f, ast.Call) or f.head is None:
                        continue
                    heads.append(_head(kb, f))
                actions.append(action)
            elif head == "bind":
                actions.append(action)
            elif head in _CONTROL and _contains_assert(action):
                reason = f"asserts inside ({head} ...): the conclusion depends on control flow"
            elif head == "duplicate":
                reason = reason or "duplicate copies a matched fact; not usable backwards"
        if reason is None and heads:
            for a in actions:
                used = _uses_fact_address(a, addresses)
                if used:
                    reason = f"its conclusion uses the fact address ?{used}"
                    break
        if reason is None and not heads:
            if rule.modifies or rule.retracts:
                reason = "only modifies or retracts facts (not used backwards)"
            else:
                reason = "asserts nothing (no conclusion to prove)"
        if reason is not None:
            skipped.append(SkippedRule(name, reason))
            continue
        while actions and actions[-1].head != "assert":
            actions.pop()
        cf = kb.rule_certainty.get(rule.name, kb.rule_certainty.get(bare(rule.name), 1.0))
        br = BackwardRule(rule, heads, actions, cf, name)
        usable.append(br)
        for h in heads:
            by_relation.setdefault(h.relation, []).append((br, h))
    return by_relation, usable, skipped


def _head(kb: KnowledgeBase, f: ast.Call) -> Head:
    rel = bare(str(f.head))
    t = kb.templates.get(rel)
    if t is not None and t.slots:
        slots: dict[str, list[ast.Expr]] = {}
        for s in f.args:
            if isinstance(s, ast.Call) and s.head is not None:
                slots[s.head] = list(s.args)
        return Head(rel, False, slots=slots, call=f)
    return Head(rel, True, fields=list(f.args), call=f)


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of a directed graph `node -> successors` (Tarjan's algorithm,
    iterative, so a rule graph of any depth is fine; networkx costs a second of start-up to import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, succ = work[-1]
            nxt = next(succ, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == node:
                        break
                out.append(comp)
    return out
