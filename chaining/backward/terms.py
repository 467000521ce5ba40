"""Values, typed equality and CLIPS text for the backward prover.

Values are those of `rules.facts`: `Symbol`, `String` (a plain `str` is typed as CLIPS stores
it: a symbol when it is one symbol token, else a string), `int`, `float`, and `tuple` for
multifields. CLIPS distinguishes the symbol `a` from the string "a" and the integer 1 from the
float 1.0 when matching; `vkey` (`rules.facts.value_key`, the one typed identity shared with the
pipeline) gives a hashable key that keeps those distinctions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rules.facts import IMPLIED, Fact, String, Symbol, is_symbol_token, json_float, quote_string, to_json, typed_value

# The typed identity lives in rules.facts (shared with the pipeline); re-exported for the prover.
from rules.facts import fact_key as fact_key
from rules.facts import value_key as vkey

Value = Any
Bindings = dict[str, Value]


def same(a: Value, b: Value) -> bool:
    return vkey(a) == vkey(b)


def from_clips(v: Any) -> Value:
    """A clipspy value as ours (clips.Symbol -> Symbol, str -> String, tuple -> tuple)."""
    import clips  # loaded once CLIPS has given a value: a proof that evaluates nothing never loads it

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
        return quote_string(v)
    if isinstance(v, str):
        return str(v) if isinstance(v, Symbol) or is_symbol_token(v) else quote_string(v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def show(v: Value) -> str:
    """Display form as CLIPS prints a field (multifields space-separated)."""
    if isinstance(v, tuple):
        return " ".join(show(x) for x in v)
    return clips_text(v)


def normalise_fact(f: Fact) -> Fact:
    """The fact with its values typed as CLIPS stores them (`rules.facts.typed_value`), so that keys
    and display are stable."""
    return Fact(f.template, {k: typed_value(v) for k, v in f.slots.items()}, f.id)


def fact_text(f: Fact) -> str:
    """CLIPS text of a fact: `(parent tom bob)` or `(person (name ann) (kids a b))`."""
    if set(f.slots) == {IMPLIED}:
        vals = f.slots[IMPLIED]
        return "(" + " ".join([f.template, *(show(x) for x in vals)]) + ")"
    inner = " ".join(f"({k}{'' if v == () else ' ' + show(v)})" for k, v in f.slots.items())
    return f"({f.template} {inner})" if inner else f"({f.template})"


def json_value(v: Value) -> Any:
    """`rules.facts.to_json` of a value, except a float that is not finite (`(exp 1000)`), which JSON
    cannot hold (`json.dumps` writes `Infinity`/`NaN`, which `json.loads` of other languages and `jq`
    refuse): it becomes the string "Infinity", "-Infinity" or "NaN" (`rules.facts.NON_FINITE_JSON`,
    protobuf's JSON mapping, as stored runs and predict answers write it; also inside a multifield)."""
    t = type(v)
    if t is float and not math.isfinite(v):
        return json_float(v)
    if t is tuple:
        return [json_value(x) for x in v]
    return to_json(v)


def bindings_json(b: Mapping[str, Value]) -> dict[str, Any]:
    """Bindings as JSON: variable name (without `?`) -> `json_value`."""
    return {k: json_value(v) for k, v in b.items()}


def make_fact(template: str, slots: dict[str, Value], id: int | None = None) -> Fact:
    """A Fact from values the prover already holds (bound from facts, or computed by CLIPS), without
    re-checking each value as `Fact(...)` does for data from outside (a rule conclusion is made
    once per derivation, so that check was most of the cost of a large query)."""
    f = object.__new__(Fact)
    object.__setattr__(f, "template", template)
    object.__setattr__(f, "slots", slots)
    object.__setattr__(f, "id", id)
    return f
