"""A fact's CLIPS text (`Fact.__str__`, `rules.facts._clips_text`): the fast path for floats, ints and
tuples writes what the general path writes, byte for byte, for every value."""

from __future__ import annotations

import enum
import math
import random
import struct

from rules.facts import Fact, String, Symbol, _clips_text, is_symbol_token, quote_string


def _reference(value):
    """`_clips_text` as it was before its fast path (the oracle)."""
    if isinstance(value, tuple):
        return " ".join(_reference(v) for v in value)
    if isinstance(value, String):
        return quote_string(value)
    if isinstance(value, str) and type(value) is not Symbol and not is_symbol_token(value):
        return quote_string(value)
    return str(value)


class _Float(float):
    def __str__(self) -> str:
        return "sub-float"


class _Int(enum.IntEnum):
    SEVEN = 7


class _Pair(tuple):
    pass


_EDGES = [
    0.0,
    -0.0,
    math.nan,
    -math.nan,
    math.inf,
    -math.inf,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    1e16,
    1e15,
    1e22,
    1e-5,
    1e-4,
    0.1,
    0.2 + 0.1,
    1 / 3,
    123456789.0,
    2.0**53,
    2.0**53 + 2,
    0,
    1,
    -1,
    2**63 - 1,
    -(2**63),
    2**200,
    True,
    False,
    _Float(1.5),
    _Int.SEVEN,
    Symbol("dog"),
    String("Rex"),
    "big-red",
    "two words",
    "12",
    'say "hi"',
    "back\\slash",
    "",
    "nil",
]


def _random_floats(n: int) -> list[float]:
    rng = random.Random(20261202)
    out = []
    for _ in range(n):
        out.append(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0])  # every exponent, NaN payloads
        out.append(rng.random())
        out.append(rng.uniform(-1e6, 1e6))
        out.append(float(rng.randint(-(10**6), 10**6)))
    return out


def test_every_value_reads_as_before():
    values = _EDGES + _random_floats(5000)
    for v in values:
        assert _clips_text(v) == _reference(v), v
    assert _clips_text(_Float(1.5)) == "sub-float"  # a subclass keeps its own str, as before


def test_multifields_read_as_before():
    rng = random.Random(7)
    pool = _EDGES + _random_floats(200)
    for _ in range(2000):
        t = tuple(rng.choice(pool) for _ in range(rng.randint(0, 12)))
        assert _clips_text(t) == _reference(t)
        nested = (t, 1.5, _Pair(t))
        assert _clips_text(nested) == _reference(nested)
        assert _clips_text(_Pair(t)) == _reference(_Pair(t))


def test_fact_text_reads_as_before():
    rng = random.Random(11)
    floats = _random_floats(300)
    for i in range(300):
        probs = tuple(rng.choice(floats) for _ in range(10))
        f = Fact("digit", {"position": i, "score": floats[i], "probs": probs, "model": Symbol("digits")})
        want = "(digit " + " ".join(f"({k} {_reference(v)})" for k, v in f.slots.items()) + ")"
        assert str(f) == want
        o = Fact.ordered("seen", floats[i], i, probs)
        assert str(o) == "(seen " + " ".join(_reference(v) for v in o.values) + ")"
