"""Facts: the currency between models and rules.

A fact is a named relation (its template) with slot values. Template ("unordered") facts
carry named slots; ordered facts, such as CLIPS's `(parent tom bob)`, carry their values
in the single multislot CLIPS calls `implied`.

Value types: `str` (a CLIPS symbol unless wrapped in `String`), `int`, `float`, and
`tuple` of those for multifield slots. `Symbol` and `String` let callers be explicit where
the CLIPS type matters (`(name "Rex")` is a string, `(name rex)` a symbol).
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


@dataclass(slots=True, frozen=True)
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
                "parentheses or &|~;, not a number, not starting with ?, $ or <)"
            )
        object.__setattr__(self, "slots", {k: _freeze(v, f"{self.template}.{k}") for k, v in dict(self.slots).items()})

    @classmethod
    def ordered(cls, relation: str, *values: Value, id: int | None = None) -> Fact:
        """An ordered fact such as `(parent tom bob)` -> `Fact.ordered("parent", "tom", "bob")`."""
        return cls(relation, {IMPLIED: tuple(values)}, id)

    @property
    def is_ordered(self) -> bool:
        return set(self.slots) == {IMPLIED}

    @property
    def values(self) -> tuple:
        """The values of an ordered fact (empty tuple for a template fact)."""
        return tuple(self.slots.get(IMPLIED, ())) if self.is_ordered else ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: `{"id": n, "template": name, "slots": {...}}` (tuples become lists)."""
        return {"id": self.id, "template": self.template, "slots": {k: _thaw(v) for k, v in self.slots.items()}}

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
                "or &|~;, not a number, not starting with ?, $ or <)"
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
_NAME_RE = re.compile(r'[^\s"()&|~;<?$][^\s"()&|~;]*')
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


def _thaw(value: Value) -> Any:
    return [_thaw(v) for v in value] if isinstance(value, tuple) else (str(value) if isinstance(value, str) else value)


def _clips_text(value: Value) -> str:
    if isinstance(value, tuple):
        return " ".join(_clips_text(v) for v in value)
    if isinstance(value, String):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)
