"""Fact mappings (`facts:` of input and model nodes): expressions over a scope -> facts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from rules.facts import INT_MAX, INT_MIN, Fact

from ..errors import NodeExecutionError
from ..expressions import ExpressionError, compile_expression
from ..spec import FACT_FUNCTIONS, MODEL_FUNCTIONS


def _compiled(text: Any):
    return compile_expression(text, FACT_FUNCTIONS | MODEL_FUNCTIONS)


def map_facts(
    node_id: str,
    node_type: str,
    mappings: list[dict[str, Any]],
    scope: Mapping[str, Any],
    functions: Mapping[str, Callable[..., Any]] | None = None,
) -> list[Fact]:
    """Evaluate each mapping (`template`, `slots` or `values`, optional `foreach` and `when`) into facts.

    Raises:
        NodeExecutionError: an expression failed or produced a value a fact cannot hold; names the field.
    """
    out: list[Fact] = []
    for i, fm in enumerate(mappings):
        where = f"facts[{i}]"
        try:
            if "foreach" in fm:
                items = _compiled(fm["foreach"]).evaluate(scope, functions)
                if items is None:
                    continue
                rows = [dict(scope, index=j, value=v) for j, v in enumerate(items)]
            else:
                rows = [scope]
            for row in rows:
                if "when" in fm and not _compiled(fm["when"]).evaluate(row, functions):
                    continue
                if "values" in fm:
                    vals = [_fact_value(_compiled(v).evaluate(row, functions)) for v in fm["values"]]
                    out.append(Fact.ordered(fm["template"], *vals))
                else:
                    slots = {
                        k: _fact_value(_compiled(v).evaluate(row, functions))
                        for k, v in (fm.get("slots") or {}).items()
                    }
                    out.append(_fact(fm["template"], {k: v for k, v in slots.items() if v is not None}))
        except (ExpressionError, ValueError, TypeError) as exc:
            raise NodeExecutionError(node_id, node_type, f"field {where}: {exc}") from exc
    return out


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


def _fact(template: Any, slots: dict[str, Any]) -> Fact:
    """`Fact(template, slots)`. Values that `Fact`'s checks would keep as they are (floats, strings,
    integers in CLIPS's 64-bit range, tuples of those: what `_fact_value` gives for numbers, labels
    and softmax vectors) skip them (they re-built every probability tuple of every digit fact); any
    other value goes through `Fact` itself, so what it refuses is refused the same way."""
    if type(template) is not str:
        return Fact(template, slots)
    for v in slots.values():
        t = type(v)
        if t is float or t is str or (t is int and INT_MIN <= v <= INT_MAX):
            continue
        if t is tuple and all(
            type(x) is float or type(x) is str or (type(x) is int and INT_MIN <= x <= INT_MAX) for x in v
        ):
            continue
        return Fact(template, slots)
    f = object.__new__(Fact)
    object.__setattr__(f, "template", _template(template))
    object.__setattr__(f, "slots", slots)
    object.__setattr__(f, "id", None)
    return f


@lru_cache(maxsize=1024)
def _template(template: str) -> str:
    """The template name once `Fact` has accepted it (FactError otherwise; a refusal is not cached)."""
    return Fact(template).template
