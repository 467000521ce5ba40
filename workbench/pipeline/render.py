"""Terminal drawings (rich): the pipeline graph as layers and a tree, and explanations as trees."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from chaining.derivation import derivation_tree

from .context import Plan
from .spec import Node, Pipeline

STYLE = {
    "input": "cyan",
    "model": "magenta",
    "rules": "green",
    "gate": "yellow",
    "postprocess": "green",
    "goal": "blue",
    "explain": "white",
    "output": "cyan",
}


def node_label(n: Node) -> Text:
    detail = n.get("model") or ", ".join(n.knowledge_bases) or ""
    if n.type == "goal":
        detail = f"{detail} ? {n.get('goal')}"
    t = Text()
    t.append(f"[{n.type}] ", style=STYLE.get(n.type, ""))
    t.append(n.id, style="bold")
    if detail:
        t.append(f"  {detail}", style="dim")
    return t


def draw_pipeline(p: Pipeline) -> Group:
    """The graph: one row per topological layer, then a tree from the input nodes (edges with `when` labelled)."""
    plan = Plan.build(p)
    layers = Table(title=f"pipeline {p.name} @ {plan.version[:12]}", show_header=True, expand=False)
    layers.add_column("layer", justify="right")
    layers.add_column("nodes")
    for i, gen in enumerate(plan.generations):
        row = Text("   ").join(node_label(p.nodes[n]) for n in gen)
        layers.add_row(str(i), row)
    tree = Tree(Text(p.name, style="bold"))
    seen: set[str] = set()

    def grow(branch: Tree, nid: str) -> None:
        for e in plan.outgoing[nid]:
            label = node_label(p.nodes[e.target])
            if e.when:
                label = Text(f"when {e.when} ▶ ", style="yellow") + label
            child = branch.add(label)
            if e.target in seen:
                child.add(Text("(continues above)", style="dim"))
                continue
            seen.add(e.target)
            grow(child, e.target)

    for n in p.nodes_of("input"):
        seen.add(n.id)
        grow(tree.add(node_label(n)), n.id)
    return Group(layers, tree)


def explanation_tree(expl: dict[str, Any]) -> Tree:
    """An explanation (see explanation.py) as a rich tree: summary, gates, model calls, overrides, derivations,
    proofs."""
    pl = expl.get("pipeline", {})
    root = Tree(Text(f"why: {pl.get('name')} @ {str(pl.get('version'))[:12]}", style="bold"))
    if expl.get("summary"):
        s = root.add("summary")
        for line in expl["summary"]:
            s.add(line)
    for g in expl.get("gates", []):
        b = root.add(Text(f"gate {g['node']} → {', '.join(g['branches']) or 'no branch'}", style="yellow"))
        for d in g.get("because", []):
            derivation_tree(d, b)
        for branch, wn in (g.get("why_not") or {}).items():
            w = b.add(Text(f"why not {branch}", style="yellow"))
            for r in wn.get("rules", []):
                w.add(
                    f"rule {r['rule']}: {r['status']}"
                    + (f" at premise {r['index'] + 1} {r['premise']}" if r.get("premise") else "")
                    + (f" ({r['detail']})" if r.get("detail") else "")
                )
    for c in expl.get("model_calls", []):
        root.add(
            Text(
                f"model {c['model']}@{str(c['version'])[:12]} (node {c['node']}, batch {c['batch_size']}, "
                f"queue {c['queue_ms']} ms, compute {c['compute_ms']} ms): {'; '.join(c['facts'])}",
                style="magenta",
            )
        )
    for m in expl.get("skipped_models", []):
        root.add(Text(f"model node {m} skipped (not called)", style="dim"))
    for o in expl.get("overrides", []):
        root.add(
            Text(
                f"{o['node']} overrode {'; '.join(o['removed']) or 'nothing'} → {'; '.join(o['added']) or 'nothing'}",
                style="green",
            )
        )
    if expl.get("derivations"):
        d = root.add("derivations")
        for x in expl["derivations"]:
            derivation_tree(x, d)
    for pr in expl.get("proofs", []):
        root.add(
            Text(
                f"goal {pr['goal']} in {pr['node']}: {'proved' if pr['proved'] else 'not proved'} "
                f"({len(pr['answers'])} answers)",
                style="blue",
            )
        )
    return root
