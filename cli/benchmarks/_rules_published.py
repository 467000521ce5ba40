"""Data sets of the OPS5 benchmark suite (Brant, Grose, Lofaso, Miranker, 1991), generated here in the
format CLIPS's examples distribute them (`examples/manners/manners16.fct` ..., `examples/waltz/waltz25.fct`
..., loaded with `load-facts` after `reset`), for `workbench bench rules`.

Waltz: the published scene is a row of regions; region r (r = 0..N, x offset 12r) is four copies of
one 17-line drawing (a box with a bevelled corner) at (0,0), (6,0), (0,6), (6,6) inside it, four
lines joining them, and, from the second region on, four lines joining it to the region before. A
point (x, y) is written x * 10000 + y. `waltz_fct(25)` is byte for byte the published waltz25.fct
(1,973 facts; checked in tests/chaining/forward/test_rules_published.py against its length, first and
last lines).

Manners: guests n1..nN, half of each sex in random order, each with 2 or 3 of the hobbies h1..h3 in
random order, then `(last_seat (seat N))`, `(count (c 1))`, `(context (state start))`, as the
published manners16/32/64/128.fct. The published files come from a random generator; this one
draws from Python's `random` with a fixed seed, so its guests are the same kind, not the same names.

Both return facts in the engine's input form (`{"template", "slots"}`) and as `.fct` text.
"""

from __future__ import annotations

import random

# one drawing: 17 lines between points given as (dx, dy) from its corner
_DRAWING = (
    ((0, 0), (2, 0)), ((2, 0), (3, 0)), ((3, 0), (4, 0)),
    ((0, 0), (0, 2)), ((0, 2), (0, 3)), ((0, 3), (0, 4)),
    ((0, 4), (4, 4)), ((4, 4), (4, 0)), ((4, 0), (5, 1)),
    ((5, 1), (5, 2)), ((5, 2), (5, 3)), ((5, 3), (5, 5)),
    ((5, 5), (4, 4)), ((5, 5), (3, 5)), ((3, 5), (2, 5)),
    ((2, 5), (1, 5)), ((1, 5), (0, 4)),
)  # fmt: skip
_CORNERS = ((0, 0), (6, 0), (0, 6), (6, 6))
# lines joining the four drawings of a region, and joining a region to the one before (x offsets from the region)
_INSIDE = (((5, 3), (6, 3)), ((3, 5), (3, 6)), ((8, 5), (8, 6)), ((5, 8), (6, 8)))
_BETWEEN = (((-1, 3), (0, 3)), ((-3, 5), (-3, 6)), ((2, 5), (2, 6)), ((-1, 8), (0, 8)))
REGION_WIDTH = 12


def _point(x: int, y: int) -> int:
    return x * 10000 + y


def waltz_lines(regions: int) -> list[tuple[int, int]]:
    """The (p1, p2) lines of the published waltz`regions` scene, in the published order."""
    lines = []
    for r in range(regions + 1):
        x0 = REGION_WIDTH * r
        lines += [(_point(x0 + a[0], a[1]), _point(x0 + b[0], b[1])) for a, b in _INSIDE]
        for cx, cy in _CORNERS:
            lines += [(_point(x0 + cx + a[0], cy + a[1]), _point(x0 + cx + b[0], cy + b[1])) for a, b in _DRAWING]
        if r:
            lines += [(_point(x0 + a[0], a[1]), _point(x0 + b[0], b[1])) for a, b in _BETWEEN]
    return lines


def waltz_facts(regions: int) -> list[dict]:
    """`(stage (value duplicate))` and the scene's `line` facts."""
    return [{"template": "stage", "slots": {"value": "duplicate"}}] + [
        {"template": "line", "slots": {"p1": a, "p2": b}} for a, b in waltz_lines(regions)
    ]


def waltz_fct(regions: int) -> str:
    """The published waltz`regions`.fct text."""
    return "(stage (value duplicate))\n" + "".join(f"(line (p1 {a}) (p2 {b}))\n" for a, b in waltz_lines(regions))


def manners_guests(guests: int, seed: int = 1) -> list[tuple[str, str, list[str]]]:
    """(name, sex, hobbies) of each guest: half of each sex in random order, 2-3 of h1..h3 in random order."""
    rng = random.Random(seed)
    sexes = ["m", "f"] * (guests // 2) + ["m"] * (guests % 2)
    rng.shuffle(sexes)
    out = []
    for i in range(guests):
        hobbies = [f"h{h}" for h in rng.sample(range(1, 4), rng.randint(2, 3))]
        out.append((f"n{i + 1}", sexes[i], hobbies))
    return out


def manners_facts(guests: int, seed: int = 1) -> list[dict]:
    """The published manners`guests`.fct's facts, in its order."""
    facts = [
        {"template": "guest", "slots": {"name": name, "sex": sex, "hobby": h}}
        for name, sex, hobbies in manners_guests(guests, seed)
        for h in hobbies
    ]
    return facts + [
        {"template": "last_seat", "slots": {"seat": guests}},
        {"template": "count", "slots": {"c": 1}},
        {"template": "context", "slots": {"state": "start"}},
    ]


def manners_fct(guests: int, seed: int = 1) -> str:
    """The facts of `manners_facts` as a `.fct` file."""
    return "".join(
        f"({f['template']} " + " ".join(f"({k} {v})" for k, v in f["slots"].items()) + ")\n"
        for f in manners_facts(guests, seed)
    )
