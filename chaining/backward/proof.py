"""Proof trees: how each answer of a goal was established (recorded while proving, never re-derived)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rules.facts import Fact

from .terms import Value, bindings_json, fact_text

# kinds: "fact" (given: working memory or deffacts), "asked" (a person's or a model's answer),
# "rule" (concluded by a rule from its premises), "test", "not", "exists", "forall", "goal"
# (a conjunctive goal: its premises are the conjuncts), "combined" (certainty factors: one fact
# derived several ways; its premises are the derivations, its certainty their EMYCIN combination).
PROOF_KINDS = ("fact", "asked", "rule", "test", "not", "exists", "forall", "goal", "combined")


# levels of a proof nested in `Proof.to_dict` before the rest is a flat list of steps
NESTED_PROOF_DEPTH = 100

NO_BINDINGS: dict = {}  # shared by the conclusions of a proof run without HOW (never mutated)


@dataclass(slots=True, repr=False)
class Proof:
    """One node of a proof tree.

    Attributes:
        kind: one of PROOF_KINDS.
        fact: the fact established (fact / asked / rule nodes), else None.
        source: for "fact": "working-memory" or "deffacts"; for "asked": "person", "model" or "script".
        rule: the rule's name for "rule" nodes.
        bindings: the rule's variable bindings (rule nodes).
        premises: child proofs, in premise order (a list, or a tuple shared with the prover's state).
        certainty: certainty factor when the knowledge base uses them, else None.
        detail: the test expression, the negated pattern, or the question text.
        fact_id: the working-memory id of a given fact (CLIPS fact index), else None.
    """

    kind: str
    fact: Fact | None = None
    source: str | None = None
    rule: str | None = None
    bindings: dict[str, Value] = field(default_factory=dict)
    premises: list[Proof] = field(default_factory=list)
    certainty: float | None = None
    detail: str | None = None
    fact_id: int | None = None

    @property
    def proof(self) -> Proof:
        """This node: a table's answer without certainty factors is its proof node (`tables._add`),
        read as a `TAnswer` is (`.fact`, `.proof`)."""
        return self

    def __repr__(self) -> str:
        # one level only: the generated repr recursed through premises (RecursionError on deep proofs)
        return f"Proof({self.label!r}, premises={len(self.premises)})"

    @property
    def label(self) -> str:
        """One line describing this node (used by the rich renderer)."""
        cf = f" [cf {self.certainty:.4g}]" if self.certainty is not None else ""
        if self.kind == "fact":
            fid = f"f-{self.fact_id} " if self.fact_id is not None else ""
            return f"{fact_text(self.fact)}  given ({fid}{self.source}){cf}"
        if self.kind == "asked":
            return f"{fact_text(self.fact)}  answered by {self.source}: {self.detail}{cf}"
        if self.kind == "rule":
            return f"{fact_text(self.fact)}  by rule {self.rule}{cf}"
        if self.kind == "test":
            return f"(test {self.detail}) is true"
        if self.kind == "not":
            return f"(not {self.detail}): no proof exists"
        if self.kind == "exists":
            return f"(exists {self.detail})"
        if self.kind == "forall":
            return f"(forall {self.detail}) holds"
        if self.kind == "combined":
            return f"{fact_text(self.fact)}  {self.detail}{cf}"
        return f"goal {self.detail}{cf}"

    def node_dict(self) -> dict[str, Any]:
        """This node alone: {"kind", "label", "fact", "template", "source", "rule", "bindings", "certainty",
        "detail", "fact_id"} (absent keys omitted, "certainty" always present)."""
        out: dict[str, Any] = {"kind": self.kind, "label": self.label}
        if self.fact is not None:
            out["fact"] = fact_text(self.fact)
            out["template"] = self.fact.template
        if self.source is not None:
            out["source"] = self.source
        if self.rule is not None:
            out["rule"] = self.rule
        if self.bindings:
            out["bindings"] = bindings_json(self.bindings)
        out["certainty"] = self.certainty
        if self.detail is not None:
            out["detail"] = self.detail
        if self.fact_id is not None:
            out["fact_id"] = self.fact_id
        return out

    def to_dict(self, max_nesting: int | None = None) -> dict[str, Any]:
        """Nested JSON form: `node_dict()` plus "premises" (the children's dicts), nested down to
        `max_nesting` levels below this node (default `NESTED_PROOF_DEPTH`, 100). A node at that depth
        that has premises gets `"premises": []` and `"continued": {"steps": [...], "root": id}`: the
        rest of its proof as the flat list of steps of `proofs_to_steps` (its own step is `root`).
        So a proof of any depth is JSON that `json.dumps`/`json.loads` (which recurse, about 1,000
        levels) and `jq` read: at most about 2 * max_nesting + 4 levels deep. Built without recursion.

        Raises:
            ValueError: `max_nesting` < 1.
        """
        limit = NESTED_PROOF_DEPTH if max_nesting is None else max_nesting
        if limit < 1:
            raise ValueError(f"max_nesting must be >= 1, got {limit}")
        root = self.node_dict()
        work = [(self, root, 0)]
        while work:
            node, out, depth = work.pop()
            if depth >= limit and node.premises:
                steps, (root_id,) = proofs_to_steps([node])
                out["premises"] = []
                out["continued"] = {"steps": steps, "root": root_id}
                continue
            children = []
            for p in node.premises:
                d = p.node_dict()
                children.append(d)
                work.append((p, d, depth + 1))
            out["premises"] = children
        return root

    def walk(self) -> Iterator[Proof]:
        """Every node of the tree, depth first, premises in order (iterative; shared nodes repeat)."""
        work = [self]
        while work:
            node = work.pop()
            yield node
            work.extend(reversed(node.premises))

    def rules_used(self) -> list[str]:
        """Names of the rules in this tree, depth first."""
        return [p.rule for p in self.walk() if p.rule]

    def leaves(self) -> list[Proof]:
        """Given facts, answers and tests the proof rests on."""
        return [p for p in self.walk() if not p.premises]


def proofs_to_steps(roots: list[Proof]) -> tuple[list[dict[str, Any]], list[int]]:
    """Proofs as one flat list of steps: a DAG in which a node shared by several proofs (a tabled
    answer used twice) is one step. Returns (steps, the step id of each root).

    Each step is `Proof.node_dict()` plus "id" (its index) and "premises" (ids of its premise
    steps, which come before it). Built iteratively, so a proof 10,000 levels deep is valid,
    shallow JSON.
    """
    ids: dict[int, int] = {}
    opened: set[int] = set()  # expanded, not yet written: a premise among them would be a cycle
    steps: list[dict[str, Any]] = []
    root_ids: list[int] = []
    for root in roots:
        work: list[tuple[Proof, bool]] = [(root, False)]
        while work:
            node, expanded = work.pop()
            if id(node) in ids:
                continue
            if not expanded:
                if id(node) in opened:
                    continue
                opened.add(id(node))
                work.append((node, True))
                work.extend((p, False) for p in reversed(node.premises) if id(p) not in ids and id(p) not in opened)
                continue
            d = node.node_dict()
            d["id"] = len(steps)
            d["premises"] = [ids[id(p)] for p in node.premises if id(p) in ids]
            ids[id(node)] = d["id"]
            steps.append(d)
        root_ids.append(ids[id(root)])
    return steps, root_ids
