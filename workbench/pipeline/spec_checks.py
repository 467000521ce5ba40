"""Structural checks of a pipeline document, per node type: known fields, their types, expressions
that compile. References (knowledge bases, models, templates) are checked by `validate.py`."""

from __future__ import annotations

from typing import Any

from .errors import Issue
from .expressions import ExpressionError, compile_expression
from .spec import COMMON_FIELDS, FACT_FUNCTIONS, MODEL_FUNCTIONS, NODE_FIELDS, REQUIRED_FIELDS, Edge, Node, Pipeline
from .spec_generate import check_generate

# a node's time limit: no longer than the longest a predict may run (`timeout_s` of the API is at most 3600 s)
NODE_TIMEOUT_MAX_S = 3600.0


def check_node(pipe: Pipeline, n: Node) -> list[Issue]:
    out: list[Issue] = []

    def bad(fld: str, msg: str) -> None:
        out.append(pipe.issue(n.id, fld, msg))

    allowed = COMMON_FIELDS + NODE_FIELDS[n.type]
    for key in n.config:
        if key not in allowed:
            bad(
                str(key),
                f"unknown field for a {n.type} node; expected one of "
                + ", ".join(k for k in allowed if k not in ("id", "type")),
            )
    for key in REQUIRED_FIELDS.get(n.type, ()):
        if n.config.get(key) in (None, "", [], {}):
            bad(key, f"required for a {n.type} node")
    c = n.config
    if "description" in c and not isinstance(c["description"], str):
        bad("description", "expected a string")
    if "join" in c and c["join"] not in ("all", "any"):
        bad("join", f"expected 'all' or 'any', got {c['join']!r}")
    if "schema" in c and not isinstance(c["schema"], dict):
        bad("schema", "expected a JSON Schema object (a mapping)")
    if "schema" in c and isinstance(c["schema"], dict):
        import jsonschema

        try:
            jsonschema.Draft202012Validator.check_schema(c["schema"])
        except jsonschema.SchemaError as exc:
            bad("schema" + "".join(f".{p}" for p in exc.path), f"not a valid JSON Schema: {exc.message}")
        else:
            for where, ref, why in unresolvable_refs(c["schema"]):
                bad("schema" + "".join(f".{p}" for p in where) + ".$ref", f"{ref!r} does not resolve: {why}")
    if "facts" in c:
        out += _check_fact_mappings(pipe, n, c["facts"], MODEL_FUNCTIONS if n.type == "model" else frozenset())
    if n.type == "generate":
        out += check_generate(pipe, n, FACT_FUNCTIONS)
    if "knowledge_base" in c:
        kb = c["knowledge_base"]
        if not (isinstance(kb, str) and kb) and not (
            isinstance(kb, list) and kb and all(isinstance(k, str) and k for k in kb)
        ):
            bad("knowledge_base", "expected a knowledge base name or path, or a list of them")
    for key in ("emit", "targets"):
        if key in c and not (isinstance(c[key], list) and all(isinstance(t, str) for t in c[key])):
            bad(key, "expected a list of template names")
    for key in ("max_firings", "max_answers", "max_depth"):
        if key in c and not (isinstance(c[key], int) and not isinstance(c[key], bool)):
            bad(key, f"expected an integer, got {c[key]!r}")
        elif key in c and key != "max_firings" and c[key] < 0:  # max_firings: negative is no limit, as (run -1)
            bad(key, f"expected a non-negative integer, got {c[key]!r}")
    if "timeout_s" in c and not (
        isinstance(c["timeout_s"], (int, float))
        and not isinstance(c["timeout_s"], bool)
        and 0 < c["timeout_s"] <= NODE_TIMEOUT_MAX_S
    ):
        bad("timeout_s", f"expected positive seconds, at most {NODE_TIMEOUT_MAX_S:g}, got {c['timeout_s']!r}")
    if "strategy" in c:
        from chaining.forward import STRATEGY_NAMES

        if c["strategy"] not in STRATEGY_NAMES:
            bad(
                "strategy",
                f"unknown conflict-resolution strategy {c['strategy']!r}; expected one of {', '.join(STRATEGY_NAMES)}",
            )
    if "all" in c and not isinstance(c["all"], bool):
        bad("all", "expected true or false")
    if n.type == "model":
        if "model" in c and not isinstance(c["model"], str):
            bad("model", "expected a model name")
        inputs = c.get("inputs")
        if inputs is not None and not isinstance(inputs, dict):
            bad("inputs", "expected a mapping from model input name to an expression")
        elif isinstance(inputs, dict):
            for k, v in inputs.items():
                _check_expr(out, pipe, n, f"inputs.{k}", v, FACT_FUNCTIONS)
        if "labels" in c and not (
            isinstance(c["labels"], list) and all(isinstance(x, (str, int)) for x in c["labels"])
        ):
            bad("labels", "expected a list of class labels (strings or integers)")
    if n.type == "gate":
        dec = c.get("decision")
        if dec is not None and not (
            isinstance(dec, dict)
            and set(dec) <= {"template", "slot"}
            and all(isinstance(v, str) and v for v in dec.values())
        ):
            bad("decision", "expected {template: NAME, slot: NAME}")
        if "default" in c and not isinstance(c["default"], str):
            bad("default", "expected a branch name")
    if n.type == "goal" and "goal" in c:
        g = c["goal"]
        if not (isinstance(g, str) and g.strip().startswith("(") and g.strip().endswith(")")):
            bad("goal", f"expected a fact pattern such as '(ancestor ?x otto)', got {g!r}")
    if n.type == "output" and "fields" in c:
        fields = c["fields"]
        if not isinstance(fields, dict) or not fields:
            bad("fields", "expected a mapping from output field to an expression (or {expr, default})")
        else:
            for k, v in fields.items():
                if isinstance(v, dict):
                    if "expr" not in v or set(v) - {"expr", "default"}:
                        bad(f"fields.{k}", "expected an expression or {expr: EXPRESSION, default: VALUE}")
                        continue
                    v = v["expr"]
                _check_expr(out, pipe, n, f"fields.{k}", v, FACT_FUNCTIONS)
    return out


def _check_fact_mappings(pipe: Pipeline, n: Node, facts: Any, funcs: frozenset[str]) -> list[Issue]:
    out: list[Issue] = []
    if not isinstance(facts, list):
        return [pipe.issue(n.id, "facts", "expected a list of {template, slots, foreach?, when?}")]
    for i, fm in enumerate(facts):
        where = f"facts[{i}]"
        if (
            not isinstance(fm, dict)
            or "template" not in fm
            or set(fm) - {"template", "slots", "values", "foreach", "when"}
        ):
            out.append(
                pipe.issue(
                    n.id,
                    where,
                    "expected {template: NAME, slots: {SLOT: EXPRESSION}} "
                    "(optional foreach, when; or values: [...] for an ordered fact)",
                )
            )
            continue
        if not isinstance(fm["template"], str) or not fm["template"]:
            out.append(pipe.issue(n.id, f"{where}.template", "expected a template name"))
        slots = fm.get("slots", {})
        if "slots" in fm and "values" in fm:
            out.append(
                pipe.issue(n.id, where, "give either 'slots' (template fact) or 'values' (ordered fact), not both")
            )
        if not isinstance(slots, dict):
            out.append(pipe.issue(n.id, f"{where}.slots", "expected a mapping from slot name to expression"))
        else:
            for k, v in slots.items():
                _check_expr(out, pipe, n, f"{where}.slots.{k}", v, funcs)
        if "values" in fm:
            if not isinstance(fm["values"], list):
                out.append(pipe.issue(n.id, f"{where}.values", "expected a list of expressions"))
            else:
                for j, v in enumerate(fm["values"]):
                    _check_expr(out, pipe, n, f"{where}.values[{j}]", v, funcs)
        for key in ("foreach", "when"):
            if key in fm:
                _check_expr(out, pipe, n, f"{where}.{key}", fm[key], funcs)
    return out


def _check_expr(out: list[Issue], pipe: Pipeline, n: Node, fld: str, value: Any, funcs: frozenset[str]) -> None:
    try:
        compile_expression(value, funcs | FACT_FUNCTIONS)
    except ExpressionError as exc:
        out.append(pipe.issue(n.id, fld, str(exc)))


def check_edge(pipe: Pipeline, e: Edge, i: int) -> list[Issue]:
    out = []
    for end, fld in ((e.source, "from"), (e.target, "to")):
        if end not in pipe.nodes:
            out.append(
                pipe.issue(
                    None, f"edges[{i}].{fld}", f"no node {end!r}; nodes: {', '.join(pipe.nodes)}", ("edges", i, fld)
                )
            )
    if e.when is not None and e.source in pipe.nodes and pipe.nodes[e.source].type != "gate":
        out.append(
            pipe.issue(
                e.source, f"edges[{i}].when", "only edges leaving a gate node may have 'when'", ("edges", i, "when")
            )
        )
    return out


def unresolvable_refs(schema: dict[str, Any]) -> list[tuple[list[Any], str, str]]:
    """`(path, $ref, reason)` of every `$ref` in a JSON Schema (draft 2020-12) that does not resolve within it,
    found by jsonschema's own resolver (the `referencing` library), at load time rather than at the first
    request (an input schema with `{"$ref": "#/definitions/nope"}` passed `check_schema` and failed every
    predict with a 500). Nothing is fetched: a reference to another document does not resolve either.
    `$id` scopes are followed as the validator follows them."""
    from referencing import Registry
    from referencing.exceptions import PointerToNowhere, Unresolvable
    from referencing.jsonschema import DRAFT202012

    out: list[tuple[list[Any], str, str]] = []
    base = schema.get("$id") if isinstance(schema.get("$id"), str) else ""
    registry = Registry().with_resource(base, DRAFT202012.create_resource(schema)).crawl()  # nested $id too
    stack: list[tuple[list[Any], Any, Any]] = [([], schema, registry.resolver(base_uri=base))]
    while stack:
        path, node, resolver = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$id"), str) and path:
                resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
            ref = node.get("$ref")
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except PointerToNowhere:
                    out.append((path, ref, "the schema has nothing at that JSON pointer"))
                except Unresolvable:
                    out.append((path, ref, "no such document in this schema (other documents are never fetched)"))
            stack.extend((path + [k], v, resolver) for k, v in node.items() if k not in ("enum", "const"))
        elif isinstance(node, list):
            stack.extend((path + [i], v, resolver) for i, v in enumerate(node))
    return sorted(out, key=lambda x: [str(p) for p in x[0]])
