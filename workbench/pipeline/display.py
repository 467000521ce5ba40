"""Rich display of a pipeline run: HTML for Jupyter (`RunResult._repr_html_`) and a rich renderable.

Shows the run's status and provenance (pipeline, knowledge-base and model versions), the outputs,
the explanation's summary lines and, for rich, the explanation tree.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from rich.console import Group
from rich.text import Text

from chaining.display import html_table, rich_table


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


def _head(r: Any) -> str:
    took = f"{r.duration_s * 1000:.1f} ms"
    rid = (r.run_id or "not recorded")[:8]
    return f"{r.pipeline}@{r.version[:12]} run {rid}: {r.status} in {took}" + (" (cache hit)" if r.cache_hit else "")


def _versions(r: Any) -> list[list[str]]:
    rows = [["pipeline", r.pipeline, r.version[:12]]]
    rows += [["knowledge base", k, v[:12]] for k, v in r.knowledge_base_versions.items()]
    rows += [["model", k, v[:12]] for k, v in r.model_versions.items()]
    return rows


def run_result_html(r: Any) -> str:
    """HTML for a `RunResult` (outputs, error, summary of the explanation, versions)."""
    color = "#070" if r.ok else "#a00"
    parts = [f'<p><b style="color:{color}">{escape(_head(r))}</b></p>']
    if r.ok and isinstance(r.outputs, dict):
        parts.append(html_table(["output", "value"], [[k, _value(v)] for k, v in r.outputs.items()]))
    elif r.error:
        parts.append(f'<pre style="color:#a00">{escape(r.error)}</pre>')
    summary = (r.explanation or {}).get("summary") or []
    if summary:
        parts.append("<p><b>why</b></p><ul>" + "".join(f"<li>{escape(s)}</li>" for s in summary) + "</ul>")
    parts.append(
        "<details><summary>versions</summary>" + html_table(["kind", "name", "version"], _versions(r)) + "</details>"
    )
    return "".join(parts)


def run_result_rich(r: Any) -> Group:
    """A rich renderable for a `RunResult` (the explanation as a tree when there is one)."""
    from .render import explanation_tree

    items: list[Any] = [Text(_head(r), style="bold green" if r.ok else "bold red")]
    if r.ok and isinstance(r.outputs, dict):
        items.append(rich_table("outputs", ["output", "value"], [[k, _value(v)] for k, v in r.outputs.items()]))
    elif r.error:
        items.append(Text(r.error, style="red"))
    if r.explanation:
        items.append(explanation_tree(r.explanation))
    items.append(rich_table("versions", ["kind", "name", "version"], _versions(r)))
    return Group(*items)


def explanation_html(expl: dict[str, Any]) -> str:
    """HTML for an explanation: summary, gates, model calls, overrides, proofs, then the whole tree
    (derivations and WHY NOT included) as text in a collapsed section."""
    from rich.console import Console

    from .render import explanation_tree

    pl = expl.get("pipeline") or {}
    parts = [f"<p><b>why: {escape(str(pl.get('name')))} @ {escape(str(pl.get('version'))[:12])}</b></p>"]
    if expl.get("summary"):
        parts.append("<ul>" + "".join(f"<li>{escape(str(s))}</li>" for s in expl["summary"]) + "</ul>")
    gates = [[g.get("node"), ", ".join(g.get("branches") or []) or "no branch"] for g in expl.get("gates", [])]
    if gates:
        parts.append(html_table(["gate", "branches taken"], gates))
    calls = [
        [c.get("model"), str(c.get("version"))[:12], c.get("node"), c.get("batch_size"), "; ".join(c.get("facts", []))]
        for c in expl.get("model_calls", [])
    ]
    if calls:
        parts.append(html_table(["model", "version", "node", "batch", "facts"], calls))
    overrides = [
        [o.get("node"), "; ".join(o.get("removed", [])), "; ".join(o.get("added", []))]
        for o in expl.get("overrides", [])
    ]
    if overrides:
        parts.append(html_table(["override", "removed", "added"], overrides))
    proofs = [
        [p.get("node"), p.get("goal"), "proved" if p.get("proved") else "not proved", len(p.get("answers", []))]
        for p in expl.get("proofs", [])
    ]
    if proofs:
        parts.append(html_table(["node", "goal", "result", "answers"], proofs))
    console = Console(record=True, width=120, file=_Null(), color_system=None)
    console.print(explanation_tree(expl))
    tree = console.export_text()
    parts.append(f"<details><summary>explanation tree</summary><pre>{escape(tree)}</pre></details>")
    return "".join(parts)


class _Null:
    def write(self, _text: str) -> int:
        return 0

    def flush(self) -> None:
        pass
