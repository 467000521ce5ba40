"""Facts: the currency between models and rules.

A fact is a named relation (its template) with slot values. Template ("unordered") facts
carry named slots; ordered facts, such as CLIPS's `(parent tom bob)`, carry their values
in the single multislot CLIPS calls `implied`.

Value types: `Symbol`, `String`, plain `str`, `int`, `float`, and `tuple` of those for
multifield slots. `Symbol` and `String` say the CLIPS type (`(name "Rex")` is a string, `(name
rex)` a symbol); a plain `str` (what JSON gives) is whatever CLIPS makes of it when asserted: a
symbol when it reads as one symbol token and the slot accepts symbols, else a string
(`typed_value`).

This module is the one home of a fact's identity (`value_key`, `fact_key`: typed, so the symbol
`a` and the string "a" are different facts, as they are to CLIPS), of quoting a CLIPS string
(`quote_string`) and of turning values into plain JSON (`to_json`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

IMPLIED = "implied"


class Symbol(str):
    """A CLIPS symbol, e.g. `dog` in `(animal dog)`."""

    __slots__ = ()


class String(str):
    """A CLIPS string, e.g. `"Rex"` in `(name "Rex")`."""

    __slots__ = ()


Value = str | int | float | tuple


class FactError(ValueError):
    """A fact given as data is malformed; the message names the field at fault."""


@dataclass(slots=True, frozen=True, eq=False)
class Fact:
    """One fact: `template` name, `slots` mapping slot name to value, `id` once in working memory.

    Ordered facts have exactly one slot, `implied`, holding a tuple of values.
    """

    template: str
    slots: Mapping[str, Value] = field(default_factory=dict)
    id: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.template, str) or not self.template:
            raise FactError(f"fact template must be a non-empty string, got {self.template!r}")
        if not _is_relation_name(self.template):
            raise FactError(
                f"fact template {self.template!r} is not a CLIPS symbol (no spaces, quotes, "
                "parentheses, &|~;< or control characters, not a number, not starting with ?, $ or <)"
            )
        object.__setattr__(self, "slots", {k: _freeze(v, f"{self.template}.{k}") for k, v in dict(self.slots).items()})

    @classmethod
    def ordered(cls, relation: str, *values: Value, id: int | None = None) -> Fact:
        """An ordered fact such as `(parent tom bob)` -> `Fact.ordered("parent", "tom", "bob")`."""
        return cls(relation, {IMPLIED: tuple(values)}, id)

    def __eq__(self, other: object) -> bool:
        """Same working-memory id and same typed content (`fact_key`): the symbol `a` and the string
        "a" are different facts, as they are to CLIPS."""
        if not isinstance(other, Fact):
            return NotImplemented
        return self.id == other.id and fact_key(self) == fact_key(other)

    def __hash__(self) -> int:
        return hash((self.id, fact_key(self)))

    @property
    def is_ordered(self) -> bool:
        return set(self.slots) == {IMPLIED}

    @property
    def values(self) -> tuple:
        """The values of an ordered fact (empty tuple for a template fact)."""
        return tuple(self.slots.get(IMPLIED, ())) if self.is_ordered else ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: `{"id": n, "template": name, "slots": {...}}` (tuples become lists)."""
        return {"id": self.id, "template": self.template, "slots": {k: to_json(v) for k, v in self.slots.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "fact") -> Fact:
        """Build a fact from JSON data.

        Accepts `{"template": "person", "slots": {"name": "ann", "age": 31}}` and, for ordered
        facts, `{"template": "parent", "values": ["tom", "bob"]}` (or `"slots": {"implied": [...]}`).

        Raises:
            FactError: naming `where` and the field at fault.
        """
        if not isinstance(data, Mapping):
            raise FactError(f"{where}: expected an object with 'template', got {type(data).__name__}")
        unknown = set(data) - {"id", "template", "slots", "values"}
        if unknown:
            raise FactError(
                f"{where}: unknown field(s) {sorted(unknown)}; expected 'template' with 'slots' or 'values'"
            )
        template = data.get("template")
        if not isinstance(template, str) or not template:
            raise FactError(f"{where}.template: expected a non-empty string, got {template!r}")
        if not _is_relation_name(template):
            raise FactError(
                f"{where}.template: {template!r} is not a CLIPS symbol (no spaces, quotes, parentheses "
                "or &|~;< or control characters, not a number, not starting with ?, $ or <)"
            )
        if "values" in data and "slots" in data:
            raise FactError(f"{where}: give either 'slots' (template fact) or 'values' (ordered fact), not both")
        if "values" in data:
            values = data["values"]
            if not isinstance(values, list):
                raise FactError(f"{where}.values: expected a list, got {type(values).__name__}")
            return cls.ordered(
                template,
                *[_check_value(v, f"{where}.values[{i}]", True) for i, v in enumerate(values)],
                id=_check_id(data.get("id"), where),
            )
        slots = data.get("slots", {})
        if not isinstance(slots, Mapping):
            raise FactError(f"{where}.slots: expected an object, got {type(slots).__name__}")
        return cls(
            template,
            {k: _check_value(v, f"{where}.slots.{k}", True) for k, v in slots.items()},
            _check_id(data.get("id"), where),
        )

    def __str__(self) -> str:
        if self.is_ordered:
            return "(" + " ".join([self.template, *(_clips_text(v) for v in self.values)]) + ")"
        inner = " ".join(f"({k} {_clips_text(v)})" for k, v in self.slots.items())
        return f"({self.template} {inner})" if inner else f"({self.template})"


def facts_from_json(data: Iterable[Mapping[str, Any]], where: str = "facts") -> list[Fact]:
    """Parse a JSON list of facts (see `Fact.from_dict`); errors name the index, e.g. `facts[3].slots.age`."""
    if not isinstance(data, list):
        raise FactError(f"{where}: expected a list of facts, got {type(data).__name__}")
    return [Fact.from_dict(item, f"{where}[{i}]") for i, item in enumerate(data)]


INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # CLIPS INTEGER is a C long long


def _check_value(value: Any, where: str, finite: bool = False) -> Value:
    """A fact value as stored; `finite=True` (JSON input) also refuses inf and NaN.

    Raises:
        FactError: unsupported type, an integer outside CLIPS's 64-bit range (CLIPS would
            clamp it silently) or, with `finite`, a non-finite float; names `where`.
    """
    if isinstance(value, bool):
        return Symbol("TRUE" if value else "FALSE")
    if isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise FactError(f"{where}: integer {value} is outside CLIPS's 64-bit range [{INT_MIN}, {INT_MAX}]")
        return value
    if isinstance(value, float):
        if finite and not math.isfinite(value):
            raise FactError(
                f"{where}: {value!r} is not a finite number (JSON numbers beyond 1.8e308, NaN and Infinity are refused)"
            )
        return value
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(_check_value(v, f"{where}[{i}]", finite) for i, v in enumerate(value))
    raise FactError(
        f"{where}: unsupported value {value!r} of type {type(value).__name__}; expected string, number or list"
    )


# A template or relation name: one CLIPS symbol token (module-qualified names such as MAIN::x pass).
_NAME_RE = re.compile(r'[^\s"()&|~;<?$\x00-\x1f\x7f][^\s"()&|~;<\x00-\x1f\x7f]*')
_NUMBER_RE = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)")


@functools.lru_cache(maxsize=4096)
def _is_relation_name(name: str) -> bool:
    return bool(_NAME_RE.fullmatch(name)) and not _NUMBER_RE.fullmatch(name)


def _check_id(value: Any, where: str) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise FactError(f"{where}.id: expected a fact id (a non-negative integer) or null, got {value!r}")


def _freeze(value: Any, where: str) -> Value:
    return _check_value(value, where)


def _clips_text(value: Value) -> str:
    t = type(value)
    if t is float or t is int:  # fast path (a model's scores): `str`, as the last line, without the checks
        return str(value)
    if t is tuple:
        return " ".join([str(v) if type(v) is float else _clips_text(v) for v in value])
    if isinstance(value, tuple):
        return " ".join(_clips_text(v) for v in value)
    if isinstance(value, String):
        return quote_string(value)
    if isinstance(value, str) and type(value) is not Symbol and not is_symbol_token(value):
        return quote_string(value)  # a plain str that CLIPS stores as a string (`typed_value`)
    return str(value)


# ---- symbol tokens, typed values and a fact's identity ----------------------------------------

# A CLIPS symbol token: no whitespace or delimiter, not starting like a variable, not a number.
# CLIPS's scanner also ends a symbol at `<` and at control characters (`a<b` reads as a and <b).
_SYMBOL_RE = re.compile(
    r'[^\s"()&|~;<?$\x00-\x1f\x7f][^\s"()&|~;<\x00-\x1f\x7f]*|\$[^\s"()&|~;<?\x00-\x1f\x7f][^\s"()&|~;<\x00-\x1f\x7f]*'
)
_TOKEN_CACHE: dict[str, bool] = {}


def is_symbol_token(text: str) -> bool:
    """True when `text` reads back from CLIPS source as one symbol (e.g. `dog`, `big-red`), not
    as a number, a variable or several tokens."""
    known = _TOKEN_CACHE.get(text)
    if known is None:
        known = bool(_SYMBOL_RE.fullmatch(text)) and not _NUMBER_RE.fullmatch(text)
        if len(_TOKEN_CACHE) > 50_000:  # bounded: request text must not grow it without limit
            _TOKEN_CACHE.clear()
        _TOKEN_CACHE[text] = known
    return known


def quote_string(text: str) -> str:
    """The CLIPS string literal for `text`: in double quotes, `\\` and `"` escaped with a backslash
    (CLIPS 6.4 Basic Programming Guide, 2.3.1)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def typed_value(value: Value, strings_only: bool = False) -> Value:
    """The value as CLIPS stores it: a plain `str` becomes `String` when `strings_only` (the slot
    accepts STRING but not SYMBOL) or when it is not one symbol token, else `Symbol`; `bool`
    becomes the symbol TRUE/FALSE; tuples element-wise; `Symbol`, `String` and numbers as given."""
    t = type(value)
    if t is Symbol or t is String or t is int or t is float:
        return value
    if isinstance(value, bool):
        return Symbol("TRUE" if value else "FALSE")
    if isinstance(value, str):
        return String(value) if strings_only or not is_symbol_token(value) else Symbol(value)
    if isinstance(value, (tuple, list)):
        return tuple(typed_value(v, strings_only) for v in value)
    return value


def typed_fact(fact: Fact, string_slots: Iterable[str] = ()) -> Fact:
    """The fact with every value as CLIPS stores it (`typed_value`); `string_slots`: the template's
    slots that accept STRING but not SYMBOL (`KnowledgeBase.string_slots()[template]`)."""
    so = set(string_slots)
    return Fact(fact.template, {k: typed_value(v, k in so) for k, v in fact.slots.items()}, fact.id)


_TAGS = {Symbol: "y", String: "s", int: "i", float: "f"}


def value_key(value: Value, strings_only: bool = False) -> tuple:
    """Hashable typed key of a value: `("y", symbol)`, `("s", string)`, `("i", int)`, `("f", float)`,
    `("m", (keys...))` for a multifield. CLIPS tells the symbol `a` from the string "a" and the
    integer 1 from the float 1.0, and so does this key; a plain `str` is keyed as `typed_value`
    types it. Raises TypeError for a value that is not a fact value."""
    tag = _TAGS.get(type(value))
    if tag is not None:
        return (tag, value)
    if isinstance(value, (tuple, list)):
        return ("m", tuple(value_key(x, strings_only) for x in value))
    if isinstance(value, bool):
        return ("y", "TRUE" if value else "FALSE")
    if isinstance(value, String):
        return ("s", str(value))
    if isinstance(value, Symbol):
        return ("y", str(value))
    if isinstance(value, str):
        return ("s", value) if strings_only or not is_symbol_token(value) else ("y", value)
    if isinstance(value, int):
        return ("i", int(value))
    if isinstance(value, float):
        return ("f", float(value))
    raise TypeError(f"unsupported fact value {value!r} of type {type(value).__name__}")


def fact_key(fact: Fact, string_slots: Iterable[str] = ()) -> tuple:
    """A fact's identity by content: its template and the typed keys of its slot values
    (`value_key`), slots in name order; the working-memory id is ignored. `string_slots`: the
    template's slots that accept STRING but not SYMBOL (`KnowledgeBase.string_slots`), where a
    plain `str` is a string."""
    if string_slots:
        so = set(string_slots)
        return (fact.template, tuple((k, value_key(v, k in so)) for k, v in sorted(fact.slots.items())))
    return (fact.template, tuple((k, value_key(v)) for k, v in sorted(fact.slots.items())))


#: A float that is not finite in JSON: protobuf's JSON mapping of floats, the strings "NaN", "Infinity" and
#: "-Infinity" (JSON has no such numbers). The one spelling of every surface: stored runs, KServe and predict
#: answers (pydantic-core's `inf_nan_mode="strings"` writes the same), backward-chaining JSON.
NON_FINITE_JSON = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def json_float(x: float) -> float | str:
    """`x` if finite, else its `NON_FINITE_JSON` string ("NaN", "Infinity", "-Infinity")."""
    return x if math.isfinite(x) else NON_FINITE_JSON[repr(x)]


def finite_json(value: Any) -> Any:
    """JSON-ready data (dicts, lists, scalars) with every float that is not finite as its `NON_FINITE_JSON`
    string, so that `json.dumps(..., allow_nan=False)` writes standard JSON."""
    t = type(value)
    if t is float:
        return json_float(value)
    if t is dict:
        return {k: finite_json(v) for k, v in value.items()}
    if t is list or t is tuple:
        return [finite_json(v) for v in value]
    return value


def to_json(value: Any) -> Any:
    """Plain JSON-ready Python: `Symbol`/`String` -> `str`, tuples and lists -> lists, mappings ->
    dicts with `str` keys, objects with `to_dict()` (facts, proofs) through it, numpy arrays and
    scalars through `tolist()`; `None`, `bool`, `int`, `float` as they are; anything else as its
    `str`. The one conversion to JSON for facts, bindings, proofs and expression results."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (bool, int, float)):
        return value
    if hasattr(value, "to_dict"):
        return to_json(value.to_dict())
    if hasattr(value, "tolist"):
        return to_json(value.tolist())
    return str(value)
