"""The one shape of a forward derivation tree, and its one renderer.

A derivation says how a fact came about: the firing that asserted it, that firing's rule and the
derivations of the facts that activated it, down to facts that were given (asserted before the
first firing, from deffacts, a run's input or a model's output). `chaining.explain.forward_derivation`
builds one from a `ForwardResult`; a pipeline's explanation (`workbench.pipeline.explanation`)
builds them across nodes. Both write this JSON shape:

    {
      "fact": "(grandparent tom otto)",  # CLIPS text; null when its content was not recorded
      "fact_id": 7,              # id in the working memory it lived in (null when unknown)
      "source": "rule",          # "rule", or how a given fact came: "given", "deffacts", "input",
                                 # "model", "goal", "unknown", or a caller's label ("model:digits@3f2a")
      "rule": "grandparent",     # with "firing": the index of the firing that asserted it
      "firing": 3,
      "note": null,              # e.g. "derivation shown above" (each derivation is expanded once)
      "premises": [ ... ],       # derivations of the firing's activating facts
      # pipelines add where it happened: "node", "knowledge_base"; model outputs "model",
      # "version", "batch_size"; goal conclusions "proof" (a backward proof, `Proof.to_dict`)
    }

`derivation_label` is its one line of text and `derivation_tree` the whole tree (rich), used by
`Derivation.tree`, `workbench kb explain`, the pipeline explanation renderer and the TUI. This
module imports only rich, so front ends use it without loading CLIPS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from rich.tree import Tree

__all__ = ["derivation_label", "derivation_tree"]


def derivation_label(d: Mapping[str, Any]) -> Text:
    """One line for a derivation node: `f-7 (grandparent tom otto)  by rule grandparent (firing #3)`,
    with where it happened (node, knowledge base) and its note. Input: the JSON shape above."""
    fid = d.get("fact_id")
    text = Text(f"f-{fid} " if fid is not None else "")
    fact = d.get("fact")
    text.append(str(fact) if fact is not None else "(content not recorded)", style="bold")
    source = d.get("source")
    where = [f"node {d['node']}"] if d.get("node") else []
    if source == "rule" or (source is None and d.get("rule")):
        text.append(f"  by rule {d.get('rule')}", style="green")
        where.insert(0, f"firing #{d.get('firing')}")
    elif source == "model":
        text.append(f"  model {d.get('model')}@{str(d.get('version') or '')[:12]}", style="magenta")
        where.append(f"batch {d.get('batch_size')}")
    else:
        text.append(f"  {source}", style="cyan")
    if where:
        text.append(f" ({', '.join(where)})", style="dim")
    if d.get("note"):
        text.append(f"  [{d['note']}]", style="dim")
    return text


def derivation_tree(d: Mapping[str, Any], parent: Tree | None = None) -> Tree:
    """The derivation as a rich `Tree`, premises under their conclusion; added under `parent` when
    given (returns the derivation's own node either way)."""
    node = parent.add(derivation_label(d)) if parent is not None else Tree(derivation_label(d))
    for p in d.get("premises") or ():
        derivation_tree(p, node)
    return node
