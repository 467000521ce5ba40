"""`input` and `output` nodes: JSON Schema checks at both ends of a run, fact and field mappings."""

from __future__ import annotations

from typing import Any

from ..context import FactScope, NodeState, OpenScope, RunContext
from ..errors import InputValidationError, NodeExecutionError
from ..expressions import ExpressionError, compile_expression
from ..schema import check_schema
from ..spec import FACT_FUNCTIONS
from .mapping import map_facts


def run_input(ctx: RunContext, state: NodeState, rt: Any) -> None:
    node = state.node  # the executor checked the input against `schema` before the run started
    state.value = ctx.inputs
    state.facts = map_facts(node.id, node.type, node.get("facts") or [], {"input": ctx.inputs})
    # no texts of the input facts here: the explanation renders those it shows (`RunContext.text`)


def run_output(ctx: RunContext, state: NodeState, rt: Any) -> None:
    node = state.node
    facts = ctx.incoming_facts(node.id)
    fs = FactScope(facts)
    scope = OpenScope({**fs.names(), **ctx.values_scope(node.id)})
    funcs = fs.functions()
    result: dict[str, Any] = {}
    for name, spec in node.get("fields", {}).items():
        expr, default = (spec.get("expr"), spec.get("default")) if isinstance(spec, dict) else (spec, None)
        try:
            value = compile_expression(expr, FACT_FUNCTIONS).evaluate(scope, funcs)
        except ExpressionError as exc:
            raise NodeExecutionError(node.id, node.type, f"field fields.{name}: {exc}") from exc
        result[name] = default if value is None else value
    try:
        check_schema(node.id, node.get("schema"), result, ctx.plan.schema_check(node))
    except InputValidationError as exc:
        raise NodeExecutionError(
            node.id, node.type, f"output does not match its schema at {exc.field}: {exc.message}"
        ) from exc
    state.value = result
    state.facts = facts
    state.record = {"outputs": result}
