"""Plain-data deffacts (rules.scan): read without the grammar and checked without building the
AST, yet equal to what the grammar builds and diagnosed exactly as the full check does."""

from __future__ import annotations

import random

import pytest

import rules
from rules.scan import MAX_NESTING, FactData

TEMPLATES = """(deftemplate p (slot a (type INTEGER) (range 0 9)) (slot b) (multislot m (type SYMBOL)))
(deftemplate q (slot x (default ?NONE)) (slot y (allowed-symbols red green)))
"""
# A fact the data scanner does not take (an instance name): the whole deffacts then goes
# through the grammar and the full check.
NOT_DATA = "(zzz [inst])"


def _facts(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.4:
            a = rng.choice(["1", "5", "12", "x", "-3", "2.5"])
            m = " ".join(rng.choice(["s", "t", "7", '"u"']) for _ in range(rng.randint(0, 3)))
            slots = [f"(a {a})", f"(b {rng.choice(['k', '1', 'v w'])})", f"(m {m})"]
            if rng.random() < 0.1:
                slots.append("(c 1)")
            rng.shuffle(slots)
            out.append(f"(p {' '.join(slots[: rng.randint(1, len(slots))])})")
        elif r < 0.7:
            slots = [f"(y {rng.choice(['red', 'green', 'blue'])})"]
            if rng.random() < 0.9:
                slots.append(f"(x {rng.choice(['1', 'a'])})")
            out.append(f"(q {' '.join(slots)})")
        else:
            value = rng.choice(["a", '"s"', "1.5", "e5"])
            out.append(f"(line {rng.randint(0, 99)} {value} ; note\n)")
    return out


@pytest.mark.parametrize("seed", range(25))
def test_data_path_diagnoses_like_the_full_check(seed: int) -> None:
    rng = random.Random(seed)
    facts = _facts(rng, 30)
    data = TEMPLATES + "(deffacts d\n   " + "\n   ".join(facts) + ")\n"
    full = TEMPLATES + "(deffacts d\n   " + "\n   ".join(facts) + f"\n   {NOT_DATA})\n"
    module = rules.parse(data, "f.clp")
    assert isinstance(module.constructs[-1].facts, FactData)
    assert not isinstance(rules.parse(full, "f.clp").constructs[-1].facts, FactData)
    fast = rules.check_sources([("f.clp", data)])
    slow = [d for d in rules.check_sources([("f.clp", full)]) if "zzz" not in d.message]
    assert [str(d) for d in fast] == [str(d) for d in slow]
    # and the facts, when read, are what the grammar builds
    assert list(module.constructs[-1].facts) == rules.parse(full, "f.clp").constructs[-1].facts[:-1]


def test_data_positions_and_values() -> None:
    m = rules.parse('(deffacts d "c"\n  (line 1 -2 3.5 "s\\"q" sym)\n  (p (a 1)))', "f.clp")
    fd = m.constructs[0]
    assert fd.name == "d" and fd.comment == "c" and isinstance(fd.facts, FactData)
    first = fd.facts[0]
    assert [a.value for a in first.items] == ["line", 1, -2, 3.5, 's"q', "sym"]
    assert (first.pos.line, first.pos.column) == (2, 3)
    assert (first.items[3].pos.line, first.items[3].pos.column) == (2, 14)
    assert rules.to_clips(m) == rules.to_clips(rules.parse(rules.to_clips(m)))


def test_nesting_limit_is_located() -> None:
    text = "(defrule r => (printout t " + "(+ 1 " * (MAX_NESTING + 5) + "0" + ")" * (MAX_NESTING + 5) + "))"
    [d] = rules.check_sources([("deep.clp", text)])
    assert d.line == 1 and d.column > 1 and f"deeper than {MAX_NESTING}" in d.message
    ok = "(defrule r => (printout t " + "(+ 1 " * 900 + "0" + ")" * 900 + "))"
    assert rules.check_sources([("deep.clp", ok)]) == []


# Templates without slot constraints: their data is checked shape by shape (`FactData.shapes`).
PLAIN_TEMPLATES = """(deftemplate u (slot a) (slot b) (multislot m))
(deftemplate v (slot x (default ?NONE)) (slot y))
(deftemplate w)
"""


def _plain_facts(rng: random.Random, n: int) -> list[str]:
    values = ["1", "x", '"s (t) ; u"', "-2.5", "e5", '"q\\"q"']
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.5:
            slots = [f"(a {rng.choice(values)})", f"(b {rng.choice(values)})", f"(m {' '.join(rng.sample(values, 2))})"]
            if rng.random() < 0.05:
                slots.append("(c 1)")  # unknown slot
            if rng.random() < 0.05:
                slots.append("(a 1 2)")  # two values in a single slot (also a duplicate)
            if rng.random() < 0.05:
                slots.append("(b)")  # no value in a single slot
            rng.shuffle(slots)
            sep = rng.choice([" ", "\n      ", " ; note (x\n  "])
            out.append(f"({rng.choice(['u', '( u'[1:], ' u'])} {sep.join(slots[: rng.randint(1, len(slots))])})")
        elif r < 0.8:
            slots = [f"(y {rng.choice(values)})"]
            if rng.random() < 0.93:
                slots.append(f"( x {rng.choice(values)} )")
            out.append(f"(v {' '.join(slots)})")
        elif r < 0.9:
            out.append(rng.choice(["(w)", "(w 1)", "(w (a 1))", "(u 1 2)"]))
        else:
            out.append(f"(line {rng.randint(0, 99)} {rng.choice(values)})")
    return out


@pytest.mark.parametrize("seed", range(40))
def test_shape_path_diagnoses_like_the_full_check(seed: int) -> None:
    rng = random.Random(seed)
    facts = _plain_facts(rng, 40 if seed % 2 else 3)
    data = PLAIN_TEMPLATES + "(deffacts d\n   " + "\n   ".join(facts) + ")\n"
    full = PLAIN_TEMPLATES + "(deffacts d\n   " + "\n   ".join(facts) + f"\n   {NOT_DATA})\n"
    assert isinstance(rules.parse(data, "f.clp").constructs[-1].facts, FactData)
    fast = rules.check_sources([("f.clp", data)])
    slow = [d for d in rules.check_sources([("f.clp", full)]) if "zzz" not in d.message]
    assert [str(d) for d in fast] == [str(d) for d in slow]


def test_shapes_of_data() -> None:
    text = '(deffacts d (u (a 1) (b "x (y) ; z")) ; c (u (a 1 2))\n (u (b 2)(a "s")) ( u (m) (a 3)) (line 1 2) (w))'
    facts = rules.parse(text, "f.clp").constructs[0].facts
    assert sorted(facts.shapes()) == [
        ("line", [], 2),
        ("u", [("a", 1), ("b", 1)], 0),
        ("u", [("b", 1), ("a", 1)], 0),
        ("u", [("m", 0), ("a", 1)], 0),
        ("w", [], 0),
    ]


def test_a_file_of_nothing_but_data_skips_the_grammar() -> None:
    text = "\n(deffacts d (line 1 2)\n  (line 3 4))\n\n(deffacts e (p 1))  \n"
    module = rules.parse(text, "f.clp")
    assert [c.name for c in module.constructs] == ["d", "e"]
    assert (module.constructs[1].pos.line, module.constructs[1].pos.column) == (5, 1)
    assert [[a.value for a in f.items] for f in module.constructs[0].facts] == [["line", 1, 2], ["line", 3, 4]]
