"""Rich display of reasoner results: HTML for Jupyter (`_repr_html_`) and rich renderables (`__rich__`).

`ForwardResult` shows the printed text, the firings and the final working memory; `ProofResult`
shows the goal's answers with their bindings, certainty and proof (HOW). Tables are cut at
`MAX_ROWS` rows (the result objects keep everything).
"""

from __future__ import annotations

from html import escape
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

MAX_ROWS = 200
MAX_DEPTH = 30  # proof levels drawn in HTML (a proof can be 100,000 levels deep)
RICH_DEPTH = 12  # in a terminal each level indents 4 columns
STYLE = "border-collapse:collapse;font-family:monospace;font-size:90%"
CELL = "border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top"


def html_table(headers: list[str], rows: list[list[Any]], *, limit: int = MAX_ROWS) -> str:
    """An escaped HTML table; rows past `limit` are counted in a last line."""
    head = "".join(f'<th style="{CELL}">{escape(str(h))}</th>' for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td style="{CELL}">{escape(str(c))}</td>' for c in row) + "</tr>" for row in rows[:limit]
    )
    more = f"<p><i>... {len(rows) - limit} more</i></p>" if len(rows) > limit else ""
    return f'<table style="{STYLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}'


def rich_table(title: str, headers: list[str], rows: list[list[Any]], *, limit: int = MAX_ROWS) -> Table:
    table = Table(title=title, title_justify="left")
    for h in headers:
        table.add_column(h, overflow="fold")
    for row in rows[:limit]:
        table.add_row(*(str(c) for c in row))
    if len(rows) > limit:
        table.add_row(f"... {len(rows) - limit} more", *[""] * (len(headers) - 1))
    return table


def _forward_rows(result: Any) -> tuple[list[list[Any]], list[list[Any]]]:
    firings = [[i, f.rule, " ".join(f"f-{x}" for x in f.facts)] for i, f in enumerate(result.firings)]
    facts = [[f"f-{f.id}" if f.id is not None else "", str(f)] for f in result.facts]
    return firings, facts


def forward_result_html(result: Any) -> str:
    """HTML for a `chaining.forward.ForwardResult` (output, firings, facts)."""
    firings, facts = _forward_rows(result)
    parts = [
        f"<p><b>forward chaining</b> ({escape(result.backend)}, strategy {escape(result.strategy)}): "
        f"{len(result.firings)} firings, {len(result.facts)} facts, {result.seconds:.3f} s</p>"
    ]
    if result.output:
        parts.append(f"<pre>{escape(result.output)}</pre>")
    if result.messages:
        parts.append(f'<pre style="color:#a40">{escape(result.messages)}</pre>')
    parts.append(html_table(["#", "rule", "facts matched"], firings))
    parts.append(html_table(["id", "fact"], facts))
    return "".join(parts)


def forward_result_rich(result: Any) -> Group:
    """A rich renderable for a `ForwardResult`."""
    firings, facts = _forward_rows(result)
    head = Text(
        f"forward chaining ({result.backend}, strategy {result.strategy}): {len(result.firings)} firings, "
        f"{len(result.facts)} facts, {result.seconds:.3f} s",
        style="bold",
    )
    items: list[Any] = [head]
    if result.output:
        items.append(Text(result.output.rstrip("\n")))
    items += [
        rich_table("firings", ["#", "rule", "facts matched"], firings),
        rich_table("facts", ["id", "fact"], facts),
    ]
    return Group(*items)


def _answer_rows(result: Any) -> list[list[Any]]:
    rows = []
    for i, a in enumerate(result.answers, 1):
        bindings = ", ".join(f"?{k} = {v}" for k, v in a.bindings.items()) or "yes"
        rows.append([i, bindings, "" if a.certainty is None else f"{a.certainty:.4g}"])
    return rows


def _proof_html(node: Any, depth: int = 0, budget: list[int] | None = None) -> str:
    """A proof (HOW) as nested lists; at most MAX_ROWS steps and MAX_DEPTH levels are drawn."""
    budget = budget if budget is not None else [MAX_ROWS]
    if budget[0] <= 0 or depth >= MAX_DEPTH:
        return "<li><i>...</i></li>"
    budget[0] -= 1
    label = escape(getattr(node, "label", None) or str(getattr(node, "fact", "") or node))
    children = getattr(node, "premises", None) or []
    inner = "".join(_proof_html(c, depth + 1, budget) for c in children)
    return f"<li>{label}{f'<ul>{inner}</ul>' if inner else ''}</li>"


def proof_result_html(result: Any) -> str:
    """HTML for a `chaining.backward.ProofResult`: the answers table, then each answer's proof."""
    parts = [
        f"<p><b>goal</b> <code>{escape(result.goal)}</code>: {len(result.answers)} answer(s)"
        f"{'' if result.complete else ' (stopped at the limit)'}</p>"
    ]
    if not result.answers:
        parts.append("<p>no: the goal cannot be proved</p>")
    else:
        parts.append(html_table(["#", "bindings", "certainty"], _answer_rows(result)))
    for i, a in enumerate(result.answers[:20], 1):
        if getattr(a, "proof", None) is not None:
            parts.append(f"<details><summary>proof of answer {i}</summary><ul>{_proof_html(a.proof)}</ul></details>")
    return "".join(parts)


def proof_tree_rich(proof: Any, title: str) -> Tree:
    """A proof as a rich tree of at most MAX_ROWS steps (built without recursion: proofs may be deep)."""
    root = Tree(Text(title, style="bold"))
    stack = [(root, proof, 0)]
    budget = MAX_ROWS
    while stack:
        parent, node, depth = stack.pop()
        if budget <= 0 or depth >= RICH_DEPTH:
            parent.add(Text("... (deeper steps: the result's to_dict)", style="dim"))
            continue
        budget -= 1
        branch = parent.add(Text(getattr(node, "label", None) or str(node)))
        stack.extend((branch, child, depth + 1) for child in reversed(getattr(node, "premises", None) or []))
    return root


def proof_result_rich(result: Any) -> Group:
    """A rich renderable for a `ProofResult`: answers, then each proof as a HOW tree."""
    items: list[Any] = [Text(f"goal {result.goal}: {len(result.answers)} answer(s)", style="bold")]
    if not result.answers:
        items.append(Text("no: the goal cannot be proved"))
    else:
        items.append(rich_table("answers", ["#", "bindings", "certainty"], _answer_rows(result)))
    for i, a in enumerate(result.answers[:20], 1):
        if getattr(a, "proof", None) is not None:
            items.append(proof_tree_rich(a.proof, f"proof of answer {i}"))
    return Group(*items)
