"""Fact mappings (`facts:` of input and model nodes): expressions over a scope -> facts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from rules.facts import INT_MAX, INT_MIN, Fact

from ..errors import NodeExecutionError
from ..expressions import CALL_MEMO, ExpressionError, compile_expression
from ..spec import FACT_FUNCTIONS, MODEL_FUNCTIONS

_EXTRA = FACT_FUNCTIONS | MODEL_FUNCTIONS


def _compiled(text: Any):
    return compile_expression(text, _EXTRA)


def map_facts(
    node_id: str,
    node_type: str,
    mappings: list[dict[str, Any]],
    scope: Mapping[str, Any],
    functions: Mapping[str, Callable[..., Any]] | None = None,
) -> list[Fact]:
    """Evaluate each mapping (`template`, `slots` or `values`, optional `foreach` and `when`) into facts.

    Each expression is compiled at its first use in this call and reused for the mapping's other
    rows (a `foreach` over 8 digits looked each slot's expression up 8 times), and each slot value is
    converted and checked in one pass (`_slot_value`).

    Raises:
        NodeExecutionError: an expression failed or produced a value a fact cannot hold; names the field.
    """
    out: list[Fact] = []
    for i, fm in enumerate(mappings):
        try:
            if "foreach" in fm:
                items = _compiled(fm["foreach"]).evaluate(scope, functions)
                if items is None:
                    continue
                rows = [dict(scope, index=j, value=v, **{CALL_MEMO: {}}) for j, v in enumerate(items)]
            else:
                rows = [scope]
            when = _Lazy(fm["when"]) if "when" in fm else None
            if "values" in fm:
                values = [_Lazy(v) for v in fm["values"]]
                for row in rows:
                    if when is not None and not when.get().evaluate(row, functions):
                        continue
                    vals = [_fact_value(v.get().evaluate(row, functions)) for v in values]
                    out.append(Fact.ordered(fm["template"], *vals))
                continue
            slot_exprs = [(k, _Lazy(v)) for k, v in (fm.get("slots") or {}).items()]
            for row in rows:
                if when is not None and not when.get().evaluate(row, functions):
                    continue
                slots: dict[str, Any] = {}
                kept = True  # every value one that `Fact`'s checks keep as it is
                for k, e in slot_exprs:
                    v, keeps = _slot_value(e.get().evaluate(row, functions))
                    if v is not None:
                        slots[k] = v
                        kept = kept and keeps
                template = fm["template"]
                out.append(_fact(template, slots) if kept and type(template) is str else Fact(template, slots))
        except (ExpressionError, ValueError, TypeError) as exc:
            raise NodeExecutionError(node_id, node_type, f"field facts[{i}]: {exc}") from exc
    return out


class _Lazy:
    """An expression compiled at its first use (a compile error is raised where the evaluation was)."""

    __slots__ = ("text", "expr")

    def __init__(self, text: Any) -> None:
        self.text = text
        self.expr = None

    def get(self) -> Any:
        if self.expr is None:
            self.expr = _compiled(self.text)
        return self.expr


def _fact_value(v: Any) -> Any:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if v is None or isinstance(v, (str, int, float)):
        return v
    if isinstance(v, (list, tuple)):
        if all(type(x) is float for x in v):  # a vector of numbers (softmax...): nothing to convert
            return tuple(v)
        return tuple(_fact_value(x) for x in v)
    raise TypeError(f"value {v!r} of type {type(v).__name__} cannot be a slot value")


def _slot_value(v: Any) -> tuple[Any, bool]:
    """`(_fact_value(v), keeps)`: `keeps` when `Fact`'s checks would keep the value as it is (a
    float, a string, an integer in CLIPS's 64-bit range, a tuple of those), so the fact can be built
    without them (`_fact`); one pass over a softmax vector instead of two."""
    t = type(v)
    if t is float or t is str:
        return v, True
    if t is int:
        return v, INT_MIN <= v <= INT_MAX
    if (t is list or t is tuple) and all(type(x) is float for x in v):
        return tuple(v), True
    w = _fact_value(v)
    return w, _keeps(w)


def _keeps(v: Any) -> bool:
    t = type(v)
    if t is float or t is str or (t is int and INT_MIN <= v <= INT_MAX):
        return True
    return t is tuple and all(
        type(x) is float or type(x) is str or (type(x) is int and INT_MIN <= x <= INT_MAX) for x in v
    )


def _fact(template: str, slots: dict[str, Any]) -> Fact:
    """`Fact(template, slots)` for values that `Fact`'s checks would keep as they are (`_slot_value`:
    floats, strings, integers in CLIPS's 64-bit range, tuples of those: numbers, labels and softmax
    vectors), without running them (they re-built every probability tuple of every digit fact); any
    other value goes through `Fact` itself (`map_facts`), so what it refuses is refused the same way."""
    f = object.__new__(Fact)
    object.__setattr__(f, "template", _template(template))
    object.__setattr__(f, "slots", slots)
    object.__setattr__(f, "id", None)
    return f


@lru_cache(maxsize=1024)
def _template(template: str) -> str:
    """The template name once `Fact` has accepted it (FactError otherwise; a refusal is not cached)."""
    return Fact(template).template
