"""Inputs of `workbench bench rules`: Miss Manners guests, Waltz scenes, gating requests."""

from __future__ import annotations

import random


def manners_facts(guests: int, seed: int = 1) -> list[dict]:
    """Miss Manners guests: sexes balanced, each guest 2-3 hobbies out of 3, seats = guests."""
    rng = random.Random(seed)
    sexes = ["m", "f"] * (guests // 2)
    rng.shuffle(sexes)
    facts = []
    for i in range(guests):
        for h in rng.sample(range(1, 4), rng.randint(2, 3)):
            facts.append({"template": "guest", "slots": {"name": f"g{i + 1}", "sex": sexes[i], "hobby": f"h{h}"}})
    facts.append({"template": "last-seat", "slots": {"seat": guests}})
    return facts


def waltz_facts(cubes: int) -> list[dict]:
    """A scene of `cubes` separate cubes in general position: a fork at the centre, three arrows
    and three L junctions on the hexagonal outline; neighbours listed clockwise."""
    facts = []
    for c in range(cubes):
        outline = [f"c{c}a{i}" for i in range(6)]
        centre = f"c{c}m"
        facts.append({"template": "junction", "slots": {"id": centre, "type": "fork", "edges": outline[0::2]}})
        for i, j in enumerate(outline):
            nxt, prv = outline[(i + 1) % 6], outline[(i - 1) % 6]
            if i % 2 == 0:
                facts.append({"template": "junction", "slots": {"id": j, "type": "arrow", "edges": [nxt, centre, prv]}})
            else:
                facts.append({"template": "junction", "slots": {"id": j, "type": "L", "edges": [nxt, prv]}})
            facts.append({"template": "border", "slots": {"from": j, "to": nxt}})
    return facts


def gating_facts(i: int) -> list[dict]:
    """The five facts of request number `i` (deterministic, varied so every rule fires sometimes)."""
    return [
        {
            "template": "request",
            "slots": {"id": i, "channel": ("api", "email", "web")[i % 3], "length": 100 + (i * 37) % 600},
        },
        {"template": "prediction", "slots": {"label": ("spam", "ham")[i % 2], "score": ((i * 53) % 100) / 100}},
        {"template": "user", "slots": {"tier": ("gold", "basic", "basic")[i % 3], "strikes": (i * 7) % 5}},
        {"template": "limits", "slots": {"min-score": 0.3, "max-length": 450}},
        {"template": "clock", "slots": {"hour": (i * 5) % 24}},
    ]
