"""Values, typed equality and CLIPS text for the backward prover.

Values are those of `rules.facts`: `Symbol` (or a plain `str`, read as a symbol), `String`,
`int`, `float`, and `tuple` for multifields. CLIPS distinguishes the symbol `a` from the
string "a" and the integer 1 from the float 1.0 when matching; `vkey` gives a hashable key
that keeps those distinctions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import clips

from rules.facts import IMPLIED, Fact, String, Symbol

Value = Any
Bindings = dict[str, Value]
_TAGS = {Symbol: "y", String: "s", int: "i", float: "f"}


def vkey(v: Value) -> tuple:
    """Hashable typed key: ("y", sym) / ("s", str) / ("i", int) / ("f", float) / ("m", (keys...))."""
    tag = _TAGS.get(type(v))
    if tag is not None:
        return (tag, v)
    if isinstance(v, tuple):
        return ("m", tuple(vkey(x) for x in v))
    if isinstance(v, bool):
        return ("y", "TRUE" if v else "FALSE")
    if isinstance(v, String):
        return ("s", str(v))
    if isinstance(v, str):
        return ("y", str(v))
    if isinstance(v, int):
        return ("i", v)
    if isinstance(v, float):
        return ("f", v)
    raise TypeError(f"unsupported value {v!r}")


def same(a: Value, b: Value) -> bool:
    return vkey(a) == vkey(b)


def from_clips(v: Any) -> Value:
    """A clipspy value as ours (clips.Symbol -> Symbol, str -> String, tuple -> tuple)."""
    if isinstance(v, (tuple, list)):
        return tuple(from_clips(x) for x in v)
    if isinstance(v, clips.Symbol):
        return Symbol(v)
    if isinstance(v, clips.InstanceName):
        return Symbol(v)
    if isinstance(v, str):
        return String(v)
    if isinstance(v, (int, float)):
        return v
    return Symbol(str(v))


def clips_text(v: Value) -> str:
    """CLIPS source for a value; a multifield becomes `(create$ ...)`."""
    if isinstance(v, tuple):
        return "(create$" + "".join(" " + clips_text(x) for x in v) + ")"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, String):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, str):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def show(v: Value) -> str:
    """Display form as CLIPS prints a field (multifields space-separated)."""
    if isinstance(v, tuple):
        return " ".join(show(x) for x in v)
    return clips_text(v)


def to_json(v: Value) -> Any:
    if isinstance(v, tuple):
        return [to_json(x) for x in v]
    if isinstance(v, str):
        return str(v)
    return v


_SYMBOL = re.compile(r'[^\s"()&|~;?$<][^\s"()&|~;]*')


def is_symbol_text(text: str) -> bool:
    """Whether `text` can be written as a CLIPS symbol (else it needs to be a string)."""
    return bool(_SYMBOL.fullmatch(text))


def fact_key(f: Fact) -> tuple:
    """Identity of a fact's content (template + typed slot values); ids are ignored."""
    slots = f.slots
    if len(slots) == 1:  # ordered facts (and one-slot templates): no sort
        ((k, v),) = slots.items()
        if type(v) is tuple:
            tags = _TAGS
            return (f.template, ((k, ("m", tuple((tags[type(x)], x) if type(x) in tags else vkey(x) for x in v))),))
        return (f.template, ((k, vkey(v)),))
    return (f.template, tuple((k, vkey(v)) for k, v in sorted(slots.items())))


def normalise_fact(f: Fact) -> Fact:
    """Plain `str` values become `Symbol`s so that keys and display are stable."""

    def norm(v: Value) -> Value:
        if isinstance(v, tuple):
            return tuple(norm(x) for x in v)
        if isinstance(v, str) and not isinstance(v, (Symbol, String)):
            return Symbol(v) if is_symbol_text(v) else String(v)
        return v

    return Fact(f.template, {k: norm(v) for k, v in f.slots.items()}, f.id)


def fact_text(f: Fact) -> str:
    """CLIPS text of a fact: `(parent tom bob)` or `(person (name ann) (kids a b))`."""
    if set(f.slots) == {IMPLIED}:
        vals = f.slots[IMPLIED]
        return "(" + " ".join([f.template, *(show(x) for x in vals)]) + ")"
    inner = " ".join(f"({k}{'' if v == () else ' ' + show(v)})" for k, v in f.slots.items())
    return f"({f.template} {inner})" if inner else f"({f.template})"


def bindings_json(b: Mapping[str, Value]) -> dict[str, Any]:
    return {k: to_json(v) for k, v in b.items()}
