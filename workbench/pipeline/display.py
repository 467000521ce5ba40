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
