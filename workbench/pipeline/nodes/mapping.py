"""Fact mappings (`facts:` of input and model nodes): expressions over a scope -> facts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rules.facts import Fact

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
                    out.append(Fact(fm["template"], {k: v for k, v in slots.items() if v is not None}))
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
