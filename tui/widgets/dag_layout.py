"""Draw a pipeline DAG as text: layered top-to-bottom layout with box-drawing connectors.

Layout follows the Sugiyama scheme in its simplest form (Sugiyama, Tagawa and Toda, 1981):
layers by longest path from the sources, long edges split by dummy vertices, one barycentre
pass to order each layer, then edges drawn between adjacent layers on a character grid whose
cells record which directions a line leaves them in (merged into one box-drawing character).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

UP, DOWN, LEFT, RIGHT = 1, 2, 4, 8
_BOX = {
    UP | DOWN: "│",
    LEFT | RIGHT: "─",
    UP | RIGHT: "└",
    UP | LEFT: "┘",
    DOWN | RIGHT: "┌",
    DOWN | LEFT: "┐",
    UP | DOWN | RIGHT: "├",
    UP | DOWN | LEFT: "┤",
    LEFT | RIGHT | DOWN: "┬",
    LEFT | RIGHT | UP: "┴",
    UP | DOWN | LEFT | RIGHT: "┼",
    UP: "│",
    DOWN: "│",
    LEFT: "─",
    RIGHT: "─",
}
TYPE_STYLES = {
    "input": "bold cyan",
    "output": "bold cyan",
    "model": "bold magenta",
    "rules": "bold green",
    "gate": "bold yellow",
    "postprocess": "bold green",
    "goal": "bold blue",
    "explain": "bold white",
}
GAP = 2


@dataclass(slots=True)
class Placed:
    """A vertex placed on the grid: label row, first column, label text; dummy vertices have no label."""

    key: str
    layer: int
    x: int = 0
    label: str = ""
    dummy: bool = False

    @property
    def width(self) -> int:
        return 1 if self.dummy else len(self.label)

    @property
    def center(self) -> int:
        return self.x + self.width // 2


def layers_of(nodes: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layer of each node (sources at 0). Nodes on a cycle keep the layer reached
    before the cycle closes, so a cyclic document still draws (validation reports the cycle)."""
    layer = {n: 0 for n in nodes}
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    indeg = {n: 0 for n in nodes}
    for a, b in edges:
        if a in succ and b in succ:
            succ[a].append(b)
            indeg[b] += 1
    ready = [n for n in nodes if indeg[n] == 0]
    while ready:
        n = ready.pop(0)
        for m in succ[n]:
            layer[m] = max(layer[m], layer[n] + 1)
            indeg[m] -= 1
            if indeg[m] == 0:
                ready.append(m)
    return layer


def draw_dag(
    nodes: list[tuple[str, str]],
    edges: list[tuple[str, str, str | None]],
    *,
    selected: str | None = None,
    bad: set[str] | frozenset[str] = frozenset(),
) -> Text:
    """Render nodes `(id, type)` and edges `(source, target, when)` as a multi-line rich Text.

    The selected node is drawn reversed, nodes in `bad` red with a ✗. Edge branch labels
    (`when`) are written beside the arrow head when there is room.
    """
    if not nodes:
        return Text("(empty pipeline: press a to add a node)", style="dim")
    ids = [n for n, _ in nodes]
    types = dict(nodes)
    real_edges = [(a, b, w) for a, b, w in edges if a in types and b in types and a != b]
    layer = layers_of(ids, [(a, b) for a, b, _ in real_edges])

    placed: dict[str, Placed] = {}
    for n in ids:
        mark = "✗ " if n in bad else ""
        placed[n] = Placed(n, layer[n], label=f"[{mark}{n}·{types[n]}]")
    # Split long edges by dummies so every drawn segment joins adjacent layers.
    segments: list[tuple[str, str, str | None]] = []
    for i, (a, b, when) in enumerate(real_edges):
        la, lb = layer[a], layer[b]
        if lb <= la:  # back edge of a cycle: not drawn as a segment
            continue
        prev = a
        for k in range(la + 1, lb):
            key = f"#{i}:{k}"
            placed[key] = Placed(key, k, dummy=True)
            segments.append((prev, key, None))
            prev = key
        segments.append((prev, b, when))

    depth = max(p.layer for p in placed.values()) + 1
    rows: list[list[Placed]] = [[] for _ in range(depth)]
    for p in placed.values():
        rows[p.layer].append(p)
    preds: dict[str, list[str]] = {}
    for a, b, _ in segments:
        preds.setdefault(b, []).append(a)
    order = {n: i for i, n in enumerate(ids)}
    for L, row in enumerate(rows):
        if L == 0:
            row.sort(key=lambda p: order.get(p.key, 0))
        else:
            index = {p.key: i for i, p in enumerate(rows[L - 1])}
            row.sort(
                key=lambda p: (
                    sum(index[q] for q in preds.get(p.key, [])) / max(1, len(preds.get(p.key, [])))
                    if preds.get(p.key)
                    else len(index),
                    order.get(p.key, len(order)),
                )
            )
    widths = [sum(p.width for p in row) + GAP * (len(row) - 1) for row in rows]
    total = max(widths)
    for row, w in zip(rows, widths):
        x = (total - w) // 2
        for p in row:
            p.x = x
            x += p.width + GAP

    height = depth * 3 - 2
    cells: list[list[int]] = [[0] * (total + 1) for _ in range(height)]
    chars: list[list[str | None]] = [[None] * (total + 1) for _ in range(height)]
    styles: list[list[str | Style | None]] = [[None] * (total + 1) for _ in range(height)]
    for a, b, when in segments:
        pa, pb = placed[a], placed[b]
        r = pa.layer * 3 + 1
        sx, tx = pa.center, pb.center
        cells[r][sx] |= UP
        if sx == tx:
            cells[r][sx] |= DOWN
        else:
            step = 1 if tx > sx else -1
            cells[r][sx] |= RIGHT if step > 0 else LEFT
            for x in range(sx + step, tx, step):
                cells[r][x] |= LEFT | RIGHT
            cells[r][tx] |= (LEFT if step > 0 else RIGHT) | DOWN
        if pb.dummy:
            cells[r + 1][tx] |= UP | DOWN
        else:
            chars[r + 1][tx] = "▼"
            if when:
                label = f" {when}"
                free = all(
                    chars[r + 1][x] is None and cells[r + 1][x] == 0
                    for x in range(tx + 1, min(total + 1, tx + 1 + len(label)))
                )
                if free and tx + len(label) <= total:
                    for j, ch in enumerate(label):
                        chars[r + 1][tx + 1 + j] = ch
                        styles[r + 1][tx + 1 + j] = "italic dim"
    for p in placed.values():
        r = p.layer * 3
        if p.dummy:
            cells[r][p.x] |= UP | DOWN
            continue
        base = "bold red" if p.key in bad else TYPE_STYLES.get(types[p.key], "bold")
        style = Style.parse(base) + Style(reverse=True) if p.key == selected else base
        for j, ch in enumerate(p.label):
            chars[r][p.x + j] = ch
            styles[r][p.x + j] = style

    text = Text(no_wrap=True)
    for y in range(height):
        line = Text(no_wrap=True)
        for x in range(total + 1):
            ch = chars[y][x] or (_BOX[cells[y][x]] if cells[y][x] else " ")
            line.append(ch, styles[y][x] or ("dim" if cells[y][x] or ch == "▼" else ""))
        line.rstrip()
        text.append_text(line)
        if y < height - 1:
            text.append("\n")
    return text
