"""`DagView`: a focusable drawing of a pipeline document; Up/Down (or j/k) move the selection."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from .dag_layout import draw_dag, layers_of


class DagView(Static, can_focus=True):
    """Draws `document` (nodes and edges); `selected` is a node id; `bad` marks nodes with problems."""

    BINDINGS = [
        Binding("down,j,right,l", "move(1)", "Next node", show=False),
        Binding("up,k,left,h", "move(-1)", "Previous node", show=False),
    ]
    DEFAULT_CSS = """
    DagView { width: auto; height: auto; padding: 0 1; }
    DagView:focus { background: $boost; }
    """

    selected: reactive[str | None] = reactive(None)

    class NodeHighlighted(Message):
        """The selection moved to `node_id`."""

        def __init__(self, node_id: str | None) -> None:
            super().__init__()
            self.node_id = node_id

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.document: dict[str, Any] = {"nodes": [], "edges": []}
        self.bad: set[str] = set()

    def order(self) -> list[str]:
        """Node ids in drawing order (by layer, then document order): the Up/Down order."""
        nodes = [n["id"] for n in self.document.get("nodes", []) if "id" in n]
        edges = [(e.get("from"), e.get("to")) for e in self.document.get("edges", [])]
        layer = layers_of(nodes, edges)
        return sorted(nodes, key=lambda n: (layer[n], nodes.index(n)))

    def show(self, document: dict[str, Any], bad: set[str] | None = None) -> None:
        """Draw a (new or edited) document, keeping the selection when that node still exists."""
        self.document = document
        self.bad = set(bad or ())
        ids = self.order()
        if self.selected not in ids:
            self.selected = ids[0] if ids else None
        self._redraw()

    def _redraw(self) -> None:
        nodes = [(n["id"], n.get("type", "?")) for n in self.document.get("nodes", []) if "id" in n]
        edges = [(e.get("from"), e.get("to"), e.get("when")) for e in self.document.get("edges", [])]
        self.update(draw_dag(nodes, edges, selected=self.selected, bad=self.bad))

    def watch_selected(self, node_id: str | None) -> None:
        self._redraw()
        self.post_message(self.NodeHighlighted(node_id))

    def action_move(self, step: int) -> None:
        ids = self.order()
        if not ids:
            return
        i = ids.index(self.selected) if self.selected in ids else -step
        self.selected = ids[(i + step) % len(ids)]
