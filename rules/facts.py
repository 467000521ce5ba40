"""Facts: the currency between models and rules.

A fact is a named relation (its template) with slot values. Template ("unordered") facts
carry named slots; ordered facts, such as CLIPS's `(parent tom bob)`, carry their values
in the single multislot CLIPS calls `implied`.

Value types: `str` (a CLIPS symbol unless wrapped in `String`), `int`, `float`, and
`tuple` of those for multifield slots. `Symbol` and `String` let callers be explicit where
the CLIPS type matters (`(name "Rex")` is a string, `(name rex)` a symbol).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

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
        object.__setattr__(self, "slots", {k: _freeze(v, f"{self.template}.{k}") for k, v in dict(self.slots).items()})

    @classmethod
    def ordered(cls, relation: str, *values: Value, id: int | None = None) -> "Fact":
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
    def from_dict(cls, data: Mapping[str, Any], where: str = "fact") -> "Fact":
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
            raise FactError(f"{where}: unknown field(s) {sorted(unknown)}; expected 'template' with 'slots' or 'values'")
        template = data.get("template")
        if not isinstance(template, str) or not template:
            raise FactError(f"{where}.template: expected a non-empty string, got {template!r}")
        if "values" in data and "slots" in data:
            raise FactError(f"{where}: give either 'slots' (template fact) or 'values' (ordered fact), not both")
        if "values" in data:
            values = data["values"]
            if not isinstance(values, list):
                raise FactError(f"{where}.values: expected a list, got {type(values).__name__}")
            return cls.ordered(template, *[_check_value(v, f"{where}.values[{i}]") for i, v in enumerate(values)], id=data.get("id"))
        slots = data.get("slots", {})
        if not isinstance(slots, Mapping):
            raise FactError(f"{where}.slots: expected an object, got {type(slots).__name__}")
        return cls(template, {k: _check_value(v, f"{where}.slots.{k}") for k, v in slots.items()}, data.get("id"))

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


def _check_value(value: Any, where: str) -> Value:
    if isinstance(value, bool):
        return Symbol("TRUE" if value else "FALSE")
    if isinstance(value, (str, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(_check_value(v, f"{where}[{i}]") for i, v in enumerate(value))
    raise FactError(f"{where}: unsupported value {value!r} of type {type(value).__name__}; expected string, number or list")


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
