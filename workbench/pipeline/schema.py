"""JSON Schema checks for run inputs and outputs.

`jsonschema` is the authority (draft 2020-12) and gives the error messages, but it costs about
5 ms for a 64-number array on this machine, which is more than a small model call. So a schema
that uses only common keywords is also compiled into a plain Python predicate; a value that
passes the predicate is accepted without `jsonschema`, and anything else (a failure, or a schema
with other keywords) goes to `jsonschema`, so results never differ from it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import jsonschema

from .errors import InputValidationError

Predicate = Callable[[Any], bool]
_ANNOTATIONS = {"$schema", "$id", "title", "description", "default", "examples", "$comment", "format"}
_TYPES: dict[str, Predicate] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def _compile(schema: Any) -> Predicate | None:
    """A predicate equivalent to the schema, or None when it uses keywords not handled here."""
    if schema is True or schema == {}:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, dict):
        return None
    number = _number_predicate(schema)
    if number is not None:
        return number
    checks: list[Predicate] = []
    for key, arg in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            names = [arg] if isinstance(arg, str) else arg
            if not isinstance(names, list) or any(n not in _TYPES for n in names):
                return None
            preds = [_TYPES[n] for n in names]
            checks.append(preds[0] if len(preds) == 1 else (lambda v, ps=preds: any(p(v) for p in ps)))
        elif key == "properties":
            subs = {}
            for name, sub in arg.items():
                pred = _compile(sub)
                if pred is None:
                    return None
                subs[name] = pred
            checks.append(
                lambda v, subs=subs: not isinstance(v, dict) or all(p(v[k]) for k, p in subs.items() if k in v)
            )
        elif key == "required":
            checks.append(lambda v, req=tuple(arg): not isinstance(v, dict) or all(k in v for k in req))
        elif key == "additionalProperties":
            props = set((schema.get("properties") or {}).keys())
            if schema.get("patternProperties"):
                return None
            pred = _compile(arg)
            if pred is None:
                return None
            checks.append(
                lambda v, props=props, p=pred: (
                    not isinstance(v, dict) or all(p(x) for k, x in v.items() if k not in props)
                )
            )
        elif key == "items":
            pred = _compile(arg)
            if pred is None or "prefixItems" in schema:
                return None
            numbers = _numbers_predicate(arg) if isinstance(arg, dict) else None
            if numbers is not None:  # an array of numbers (pixels, scores): one loop, no call per item
                checks.append(numbers)
            else:
                checks.append(lambda v, p=pred: not isinstance(v, list) or all(map(p, v)))
        elif key in ("minItems", "maxItems", "minLength", "maxLength"):
            kind = list if key.endswith("Items") else str
            lo = key.startswith("min")
            checks.append(
                lambda v, n=arg, kind=kind, lo=lo: not isinstance(v, kind) or (len(v) >= n if lo else len(v) <= n)
            )
        elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            op = {
                "minimum": lambda a, b: a >= b,
                "maximum": lambda a, b: a <= b,
                "exclusiveMinimum": lambda a, b: a > b,
                "exclusiveMaximum": lambda a, b: a < b,
            }[key]
            checks.append(lambda v, n=arg, op=op: not _TYPES["number"](v) or op(v, n))
        elif key == "enum":
            vals = [json.dumps(x, sort_keys=True) for x in arg]
            checks.append(lambda v, vals=vals: json.dumps(v, sort_keys=True) in vals)
        elif key == "const":
            c = json.dumps(arg, sort_keys=True)
            checks.append(lambda v, c=c: json.dumps(v, sort_keys=True) == c)
        else:
            return None
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def _number_bounds(schema: dict[str, Any]) -> tuple[str, float, float] | None:
    """`(kind, minimum, maximum)` of the common `{type: number|integer, minimum, maximum}`, else None."""
    kind = schema.get("type")
    if kind not in ("number", "integer") or not set(schema) - _ANNOTATIONS <= {"type", "minimum", "maximum"}:
        return None
    lo, hi = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
    if not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in (lo, hi)):
        return None
    return kind, lo, hi


def _numbers_predicate(item_schema: dict[str, Any]) -> Predicate | None:
    """`items: {type: number, minimum, maximum}` as one loop over the array (the same test as
    `_number_predicate` for each item); None for other item schemas or `integer`."""
    bounds = _number_bounds(item_schema)
    if bounds is None or bounds[0] != "number":
        return None
    _, lo, hi = bounds

    def numbers(v: Any) -> bool:
        if not isinstance(v, list):
            return True
        for x in v:
            t = type(x)
            if (t is not float and t is not int) or not lo <= x <= hi:
                return False
        return True

    return numbers


def _number_predicate(schema: dict[str, Any]) -> Predicate | None:
    """One predicate for the common `{type: number|integer, minimum, maximum}` (arrays of pixels,
    scores): a single call per value instead of one per keyword."""
    bounds = _number_bounds(schema)
    if bounds is None:
        return None
    kind, lo, hi = bounds
    if kind == "integer":
        return lambda v: (type(v) is int or (type(v) is float and v.is_integer())) and lo <= v <= hi
    return lambda v: (type(v) is float or type(v) is int) and lo <= v <= hi


@lru_cache(maxsize=256)
def _compiled(schema_json: str) -> tuple[Predicate | None, jsonschema.Draft202012Validator]:
    schema = json.loads(schema_json)
    return _compile(schema), jsonschema.Draft202012Validator(schema)


def _member(key: Any) -> str:
    """One step of a JSON path to an object member: `.pixels`, or `["a b"]` when the key is not a name."""
    key = str(key)
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key, ensure_ascii=False)}]"


def check_json_numbers(node_id: str, value: Any) -> None:
    """Refuse NaN and infinities anywhere in `value`: JSON has no such numbers (Python's parser
    accepts `NaN`/`Infinity`), and JSON Schema's `minimum`/`maximum` never reject NaN.

    Raises:
        InputValidationError: naming the node and the JSON path of the first non-finite number.
    """
    try:
        json.dumps(value, allow_nan=False)
        return
    except ValueError:
        pass
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            said = "NaN" if v != v else "a number too large for a float (or Infinity)"  # 1e400 parses as inf
            raise InputValidationError(
                node_id, path, f"{said}: not a finite JSON number (NaN and infinities are refused)"
            )
        if isinstance(v, dict):
            stack.extend((path + _member(k), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, (list, tuple)):
            stack.extend((f"{path}[{i}]", x) for i, x in reversed(list(enumerate(v))))


Compiled = tuple[Predicate | None, jsonschema.Draft202012Validator]


def compiled_schema(schema: dict[str, Any]) -> Compiled:
    """The checks of a JSON Schema: (the compiled fast predicate or None, jsonschema's validator),
    shared by equal schemas (keyed by their canonical JSON)."""
    return _compiled(json.dumps(schema, sort_keys=True))


def check_schema(node_id: str, schema: dict[str, Any] | None, value: Any, compiled: Compiled | None = None) -> None:
    """Validate `value` against a node's JSON Schema (draft 2020-12). `compiled`: `schema`'s
    `compiled_schema`, when the caller keeps it (a run's `Plan.schema_check`), else looked up here.

    Raises:
        InputValidationError: naming the node and the JSON path of the first offending value (`$.pixels[3]`).
    """
    if not schema:
        return
    fast, validator = compiled or compiled_schema(schema)
    if fast is not None and fast(value):
        return
    err = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if err is not None:
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else _member(p) for p in err.absolute_path)
        raise InputValidationError(node_id, path, json_message(err))


def json_quoted(value: Any, limit: int = 120) -> str:
    """`value` as the client wrote it in JSON (messages quote values as JSON), cut to `limit` characters with
    "..."; `repr` for what JSON cannot write (NaN, infinity)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_message(err: jsonschema.ValidationError) -> str:
    """`err.message` with the values it quotes written as JSON, as the client sent them.

    jsonschema words its messages with Python's repr (`[True, False] is too short`, `None is not
    of type 'string'`, `'x' is not one of ['a', 'b']`); a client of a JSON API reads
    `[true, false] is too short`, `null is not of type "string"`, `"x" is not one of ["a", "b"]`.
    Long values are cut at 120 characters."""
    message = err.message
    values: list[Any] = [err.instance, err.validator_value]
    for v in (err.instance, err.validator_value):
        if isinstance(v, (list, tuple)):
            values.extend(v)
        elif isinstance(v, dict):
            values.extend(v)  # property names (required, additionalProperties)
    seen: set[str] = set()
    for v in sorted(values, key=lambda x: -len(repr(x))):  # longest first: a list before its items
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            continue  # numbers read the same in both
        r = repr(v)
        if r in seen or r not in message:
            continue
        seen.add(r)
        message = message.replace(r, json_quoted(v))
    return message
