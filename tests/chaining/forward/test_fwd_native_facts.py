"""The C fact asserter (`native_facts.c`) against the Python paths of `WorkingMemory.assert_all`:
same ids, same working memory, same errors, on every kind of value and fact."""

from __future__ import annotations

import clips
import pytest

from chaining.forward import native_facts
from chaining.forward.clips_memory import WorkingMemory
from chaining.forward.errors import FactAssertError
from rules.facts import Fact, String, Symbol

pytestmark = pytest.mark.skipif(not native_facts.AVAILABLE, reason=f"C fact asserter: {native_facts.UNAVAILABLE}")


def _memories():
    out = []
    for native in (True, False):
        env = clips.Environment()
        env.build("(defmodule OTHER (export deftemplate ?ALL))")
        env.build("(deftemplate OTHER::v (slot b) (multislot c))")
        env.build("(defmodule MAIN (import OTHER deftemplate ?ALL))")
        env.build("(deftemplate MAIN::t (slot i) (slot f) (slot s) (multislot m) (slot str (type STRING)))")
        env.build("(deftemplate MAIN::u (slot a))")
        env.build("(deftemplate MAIN::w (multislot ms (type STRING)) (slot any))")
        env.reset()
        out.append((env, WorkingMemory(env, native=native)))
    return out


CASES = {
    "scalars": [Fact("t", {"i": 1, "f": 2.5, "s": "dog"}), Fact("u", {"a": -7})],
    "symbols with dashes and digits": [Fact("t", {"s": "big-red_2"}), Fact("u", {"a": "x9"})],
    "strings that are not plain symbols": [
        Fact("t", {"s": "Rex the dog"}),
        Fact("t", {"s": "a.b"}),
        Fact("t", {"s": "42"}),
        Fact("t", {"s": ""}),
        Fact("u", {"a": "é"}),
    ],
    "Symbol and String values": [Fact("t", {"s": Symbol("cat")}), Fact("t", {"s": String("cat")})],
    "bools and extreme ints": [Fact("u", {"a": True}), Fact("u", {"a": 2**63 - 1}), Fact("u", {"a": -(2**63)})],
    "multifields": [
        Fact("t", {"m": (1, 2.0, "x")}),
        Fact("t", {"m": ()}),
        Fact("t", {"m": ("a b", 3)}),
        Fact("t", {"m": "one"}),
    ],
    "a strings-only slot": [Fact("t", {"str": "abc"}), Fact("t", {"str": "has space"})],
    "duplicates": [Fact("u", {"a": 1}), Fact("u", {"a": 1}), Fact("u", {"a": 2})],
    "ordered facts": [Fact.ordered("parent", "tom", "bob"), Fact("u", {"a": 3}), Fact.ordered("parent", "tom", "bob")],
    "another module's template": [Fact("v", {"b": "z", "c": (1, 2)}), Fact("u", {"a": 4})],
    "empty slots": [Fact("t", {}), Fact("u")],
    "strings-only multislot, Symbol and String anywhere": [
        Fact("w", {"ms": ("a b", "c", "")}),
        Fact("w", {"ms": "one value"}),
        Fact("w", {"any": String("a b")}),
        Fact("w", {"any": Symbol("x-1")}),
        Fact("t", {"str": String("s"), "m": (Symbol("a"), String("a"), 1)}),
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_ids_and_working_memory_as_python(case):
    (env_c, c), (env_p, p) = _memories()
    facts = CASES[case]
    ids_c, ids_p = c.assert_all(facts), p.assert_all(facts)
    assert ids_c == ids_p
    assert c.facts() == p.facts()
    # and again after a reset (the C loop keeps its templates across calls)
    env_c.reset()
    env_p.reset()
    assert c.assert_all(list(reversed(facts))) == p.assert_all(list(reversed(facts)))
    assert c.facts() == p.facts()


@pytest.mark.parametrize(
    "bad, message",
    [
        ([Fact("u", {"a": 1}), Fact("nope", {"a": 1})], "facts[1]: template 'nope' is not defined"),
        ([Fact("u", {"a": 1}), Fact("u", {"a": 1}), Fact("u", {"zz": 1})], "facts[2].slots.zz"),
        ([Fact("t", {"i": 1}), Fact("t", {"i": (1, 2)})], "facts[1].slots.i"),
    ],
)
def test_same_located_errors_as_python(bad, message):
    (_, c), (_, p) = _memories()
    with pytest.raises(FactAssertError) as from_c:
        c.assert_all(bad)
    with pytest.raises(FactAssertError) as from_python:
        p.assert_all(bad)
    assert str(from_c.value) == str(from_python.value)
    assert message in str(from_c.value)


def test_an_iterator_of_facts_is_accepted():
    (_, c), _ = _memories()
    assert c.assert_all(Fact("u", {"a": k}) for k in range(3)) == [1, 2, 3]


def test_a_c_asserter_built_from_another_source_is_not_used(monkeypatch):
    monkeypatch.setattr(native_facts, "_digest", lambda: "0" * 16)
    module, why = native_facts._load()
    assert module is None and "another version of native_facts.c" in why


def test_common_facts_take_the_c_loop_once_their_templates_are_known(monkeypatch):
    (env, c), _ = _memories()
    facts = (
        CASES["scalars"]
        + CASES["symbols with dashes and digits"]
        + [Fact("t", {"m": (1, 2.0, "x")}), Fact("v", {"b": 1})]
    )
    c.assert_all(facts)  # the first fact of each template goes through assert_fact, which learns it
    env.reset()
    slow = []
    real = WorkingMemory.assert_fact
    monkeypatch.setattr(
        WorkingMemory, "assert_fact", lambda self, f, where="fact": slow.append(f) or real(self, f, where)
    )
    assert c.assert_all(facts) == list(range(1, len(facts) + 1))
    assert slow == []


READ_KB = [
    "(deftemplate t (slot i) (slot f) (slot s) (multislot m) (slot str (type STRING)))",
    "(deftemplate u (slot a))",
    "(deftemplate e)",
]
READ_FACTS = [
    '(t (i 1) (f 2.5) (s dog) (m) (str "x y"))',
    "(u (a -3))",
    '(t (i 2) (s "quoted") (m a 1 2.5))',
    "(parent tom bob)",
    "(e)",
    '(u (a "é ü"))',
    "(u (a [inst]))",
    "(t (i 9223372036854775807) (f -0.0))",
    "(u (a <Fact-1>))",
]


def test_facts_read_back_from_a_pipeline_node_take_the_c_loop(monkeypatch):
    """Facts read back from CLIPS (Symbol and String values, as a gate passes them on to the next
    node) and plain strs in a strings-only slot are asserted by the C loop, with the values the
    Python path gives them."""
    (env, c), (env_p, p) = _memories()
    facts = [
        Fact("t", {"s": Symbol("dog"), "str": "Rex the dog", "m": (Symbol("a"), String("b c"))}),
        Fact("u", {"a": String("x y")}),
        Fact("w", {"ms": ("p q", "r"), "any": Symbol("z")}),
    ]
    c.assert_all(facts)  # learns the templates
    env.reset()
    slow = []
    real = WorkingMemory.assert_fact
    monkeypatch.setattr(
        WorkingMemory, "assert_fact", lambda self, f, where="fact": slow.append(f) or real(self, f, where)
    )
    assert c.assert_all(facts) == [1, 2, 3]
    assert slow == []
    p.assert_all(facts)
    assert _typed(c.facts()) == _typed(p.facts())


def test_symbols_read_again_after_clips_reused_their_memory():
    """The C reader keeps the symbols and strings it read by the address of CLIPS's lexeme: after
    a reset frees them, CLIPS may put other text at the same address; what is read is always
    the text now there (against the Python reader, over rounds of fresh symbols)."""
    env = clips.Environment()
    env.build("(deftemplate t (slot s) (slot str (type STRING)) (multislot m))")
    c, p = WorkingMemory(env, native=True), WorkingMemory(env, native=False)
    for round_ in range(30):
        env.reset()
        for k in range(40):
            env.assert_string(f'(t (s s{round_}-{k}) (str "x{(round_ * 7 + k) % 13}") (m m{k % 3} "m{round_}"))')
        read = c.facts()
        assert _typed(read) == _typed(p.facts())
        assert read[0].slots["s"] == f"s{round_}-0"


@pytest.mark.parametrize("native", [True, False])
def test_reading_facts_gives_the_same_values_as_python(native):
    """Every reading path (whole list, one template, templates never seen, values the C loop
    leaves to Python) against the Python reader on the same working memory."""
    env = clips.Environment()
    for construct in READ_KB:
        env.build(construct)
    env.reset()
    for text in READ_FACTS:
        env.assert_string(text)
    c, p = WorkingMemory(env, native=native), WorkingMemory(env, native=False)
    for _ in range(2):  # the second time with the templates known to the C loop
        assert c.facts() == p.facts()
        for names in (["t"], ["u"], ["e", "parent"], ["t", "u", "nope"]):
            assert c.facts(frozenset(names)) == p.facts(frozenset(names))
    facts = c.facts()
    assert [f.template for f in facts] == ["t", "u", "t", "parent", "e", "u", "u", "t", "u"]
    assert facts[0].slots == {"i": 1, "f": 2.5, "s": "dog", "m": (), "str": "x y"}
    assert type(facts[0].slots["s"]) is Symbol and type(facts[0].slots["str"]) is String
    assert facts[2].slots["m"] == ("a", 1, 2.5) and facts[5].slots["a"] == "é ü"
    assert facts[7].slots == {"i": 2**63 - 1, "f": -0.0, "s": "nil", "m": (), "str": ""}


def test_a_fact_list_changed_by_a_fact_property_does_not_crash():
    """Regression (segfault): a duck-typed fact whose `template` property empties the list being
    asserted; the C loop read the freed list. Now it holds the fact and checks the size each time."""
    (_, c), _ = _memories()
    facts: list = []

    class Duck:
        def __init__(self, n):
            self.n, self.slots = n, {"a": n}

        @property
        def template(self):
            if self.n == 0:
                facts.clear()
            return "u"

    keep = [Duck(k) for k in range(500)]
    facts += keep
    assert c.assert_all([Fact("u", {"a": -1})]) == [1]  # the C loop knows `u` now
    assert c.assert_all(facts) == [2]  # the first duck, then the list is empty


def test_a_slot_name_that_is_a_str_subclass_takes_the_python_path():
    """Regression: a str-subclass slot name's __eq__ could change the slots dict while the C loop
    held a borrowed value; such names now go to the Python path (same result as without C)."""

    class Name(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            return str.__eq__(self, other)

    results = []
    for _, memory in _memories():
        memory.assert_all([Fact("u", {"a": 0})])
        results.append((memory.assert_all([Fact("u", {Name("a"): 5})]), memory.facts(frozenset(["u"]))))
    assert results[0] == results[1] and results[0][0] == [2]


def _typed(facts):
    return [(f.id, f.template, {k: (type(v).__name__, v) for k, v in f.slots.items()}) for f in facts]


def test_values_read_back_have_the_same_types_as_python():
    """`==` cannot tell `Symbol("x")` from `String("x")`: compare the types too."""
    (env_c, c), (env_p, p) = _memories()
    facts = [
        Fact("t", {"s": "dog", "str": "dog", "i": 1, "f": 1.0}),
        Fact("t", {"s": String("dog"), "m": ("a", "b c", 2)}),
        Fact("u", {"a": Symbol("x")}),
        Fact("u", {"a": String("x")}),
    ]
    c.assert_all(facts)
    p.assert_all(facts)
    assert _typed(c.facts()) == _typed(p.facts())
    assert _typed(c.facts(frozenset(["u"]))) == _typed(p.facts(frozenset(["u"])))
