"""The pipeline expression language: a safe subset of Python expression syntax, never `eval`.

Expressions map values into model inputs (`input.pixels`), model outputs into fact slots
(`argmax(probs)`, `max(softmax(logits))`, `labels[index]`) and facts into pipeline outputs
(`prediction.label`, `fact('gate-decision').branch`, `coalesce(corrected.label, prediction.label)`).

Allowed syntax: names, attribute access, subscripts, string/number/bool/None literals, lists,
unary `-`/`not`, arithmetic `+ - * / // %`, comparisons, `and`/`or`, conditional `a if c else b`,
and calls of the functions in `FUNCTIONS` (plus `fact`, `facts`, `exists`, `count`, `label`
bound by the caller). Anything else (lambda, comprehensions, dunder access, unknown functions) is
refused when the expression is compiled, with the column of the offending part.

A missing value (an absent fact, slot or key) evaluates to `None` instead of raising, so
`coalesce(...)` and `default:` can supply a fallback; arithmetic on `None` is an error.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .expression_functions import (  # noqa: F401  (FUNCTIONS, PLAIN_RESULTS, MEMO_CALLS, CALL_MEMO: this module's API)
    CALL_MEMO,
    FUNCTIONS,
    MAX_REPEAT_ITEMS,
    MEMO_CALLS,
    PLAIN_RESULTS,
    RepeatLimitError,
    _times,
    _to_plain,
)


class ExpressionError(ValueError):
    """An expression is not in the language or failed to evaluate.

    Attributes: `expression` (the text), `column` (1-based, 0 when unknown), `reason`.
    """

    def __init__(self, expression: str, reason: str, column: int = 0):
        self.expression = expression
        self.reason = reason
        self.column = column
        where = f" (column {column})" if column else ""
        super().__init__(f"{reason}{where} in expression {expression!r}")


_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: _times(a, b),
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_CMPOPS = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


@dataclass(slots=True, frozen=True)
class Expression:
    """A compiled expression: `names` it reads (free variables) and `calls` (function names).

    `fn` is the expression compiled once into nested Python closures (one per syntax node), so an
    evaluation calls them instead of walking the syntax tree and dispatching on node types."""

    text: str
    tree: ast.Expression
    names: frozenset[str]
    calls: frozenset[str]
    fn: Callable[[Mapping[str, Any], Mapping[str, Callable[..., Any]] | None], Any]
    reads_input: bool  # a path into the run input (`_reads_input`): its lists are returned as they are
    plain_call: str | None = None  # the whole expression is a call of this built-in (`PLAIN_RESULTS`)

    def evaluate(self, scope: Mapping[str, Any], functions: Mapping[str, Callable[..., Any]] | None = None) -> Any:
        """Evaluate with `scope` (name -> value) and extra `functions` (they take precedence over
        `FUNCTIONS`); returns plain Python/numpy values.

        Raises:
            ExpressionError: an unknown name, a failing function, a type error (e.g. arithmetic on a
                missing value); the message names the expression.
        """
        try:
            value = self.fn(scope, functions)
            if self.reads_input and isinstance(value, list):
                return value  # a part of the run input: JSON already (checked), not walked again
            if self.plain_call is not None and not (functions and self.plain_call in functions):
                return value  # the built-in returns plain values (`PLAIN_RESULTS`): not walked again
            return _to_plain(value)
        except ExpressionError:
            raise
        except Exception as exc:  # a function or an operator failed on the given values
            raise ExpressionError(self.text, f"{type(exc).__name__}: {exc}") from exc


def compile_expression(text: Any, extra_functions: frozenset[str] | set[str] = frozenset()) -> Expression:
    """Compiled form of an expression, cached (see `_compile` for the rules and errors)."""
    try:
        return _compile_cached(text, frozenset(extra_functions))
    except TypeError:  # unhashable input: let _compile report it
        return _compile(text, frozenset(extra_functions))


# typed: True == 1 == 1.0 as dict keys, and each literal must keep its own type.
@lru_cache(maxsize=4096, typed=True)
def _compile_cached(text: Any, extra_functions: frozenset[str]) -> Expression:
    return _compile(text, extra_functions)


def _compile(text: Any, extra_functions: frozenset[str] = frozenset()) -> Expression:
    """Parse and check an expression (see the module docstring for the language).

    Args:
        text: the expression; a number or bool is accepted as a literal.
        extra_functions: names of functions the caller will bind at evaluation (`fact`, `label`, ...).

    Raises:
        ExpressionError: syntax error or a construct outside the language, with its column.
    """
    if isinstance(text, bool) or isinstance(text, (int, float)) or text is None:
        text = repr(text)
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError(str(text), "expected a non-empty expression string")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(text, f"syntax error: {exc.msg}", exc.offset or 0) from None
    calls: set[str] = set()
    allowed_funcs = set(FUNCTIONS) | set(extra_functions)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise ExpressionError(text, "only named functions can be called", node.col_offset + 1)
            if node.func.id not in allowed_funcs:
                raise ExpressionError(
                    text,
                    f"unknown function {node.func.id!r}; known: {', '.join(sorted(allowed_funcs))}",
                    node.col_offset + 1,
                )
            if node.keywords:
                raise ExpressionError(text, "keyword arguments are not supported", node.col_offset + 1)
            calls.add(node.func.id)
        elif isinstance(node, ast.Name):
            pass
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise ExpressionError(text, f"attribute {node.attr!r} is not accessible", node.col_offset + 1)
        elif not isinstance(node, _ALLOWED_NODES):
            raise ExpressionError(
                text,
                f"{type(node).__name__} is not allowed in pipeline expressions",
                getattr(node, "col_offset", -1) + 1,
            )
    names = _names_used_as_values(tree)  # function names are not free variables
    stripped = text.strip()
    fn = _closure(tree.body, stripped)
    body = tree.body
    plain = body.func.id if isinstance(body, ast.Call) and body.func.id in PLAIN_RESULTS else None
    return Expression(stripped, tree, frozenset(names), frozenset(calls), fn, _reads_input(body), plain)


def _names_used_as_values(tree: ast.AST) -> set[str]:
    func_nodes = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in func_nodes}


_ALLOWED_NODES = (
    ast.Expression,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.List,
    ast.Tuple,
    ast.UnaryOp,
    ast.USub,
    ast.UAdd,
    ast.Not,
    ast.BinOp,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    *_BINOPS,
    *_CMPOPS,
)


Compiled = Callable[[Mapping[str, Any], Mapping[str, Callable[..., Any]] | None], Any]


def _closure(node: ast.AST, text: str) -> Compiled:
    """Compile one checked syntax node into `f(scope, functions) -> value` (the language's
    semantics: missing values are None, arithmetic on None is an error naming the column, a
    comparison with None is False except `==` / `!=`, `and` / `or` short-circuit)."""
    if isinstance(node, ast.Constant):
        const = node.value
        return lambda scope, funcs: const
    if isinstance(node, ast.Name):
        return _name(node, text)
    if isinstance(node, ast.Attribute):
        base, attr = _closure(node.value, text), node.attr
        return lambda scope, funcs: get_member(base(scope, funcs), attr)
    if isinstance(node, ast.Subscript):
        base = _closure(node.value, text)
        if isinstance(node.slice, ast.Slice):
            lo = None if node.slice.lower is None else _closure(node.slice.lower, text)
            hi = None if node.slice.upper is None else _closure(node.slice.upper, text)

            def sliced(scope: Any, funcs: Any) -> Any:
                b = base(scope, funcs)
                a, z = (None if lo is None else lo(scope, funcs)), (None if hi is None else hi(scope, funcs))
                return None if b is None else b[a:z]

            return sliced
        key = _closure(node.slice, text)
        return lambda scope, funcs: get_member(base(scope, funcs), key(scope, funcs))
    if isinstance(node, (ast.List, ast.Tuple)):
        elts = [_closure(e, text) for e in node.elts]
        return lambda scope, funcs: [e(scope, funcs) for e in elts]
    if isinstance(node, ast.UnaryOp):
        return _unary(node, _closure(node.operand, text), text)
    if isinstance(node, ast.BinOp):
        return _binop(node, _closure(node.left, text), _closure(node.right, text), text)
    if isinstance(node, ast.BoolOp):
        return _boolop(isinstance(node.op, ast.And), [_closure(e, text) for e in node.values])
    if isinstance(node, ast.Compare):
        return _compare(node, _closure(node.left, text), [_closure(c, text) for c in node.comparators])
    if isinstance(node, ast.IfExp):
        test, body, orelse = _closure(node.test, text), _closure(node.body, text), _closure(node.orelse, text)
        return lambda scope, funcs: body(scope, funcs) if test(scope, funcs) else orelse(scope, funcs)
    if isinstance(node, ast.Call):
        return _call(node.func.id, [_closure(a, text) for a in node.args])  # type: ignore[union-attr]
    raise ExpressionError(text, f"{type(node).__name__} is not allowed", getattr(node, "col_offset", -1) + 1)


def _name(node: ast.Name, text: str) -> Compiled:
    name = node.id
    literal = {"true": True, "True": True, "false": False, "False": False}.get(name)

    def lookup(scope: Any, funcs: Any) -> Any:
        if name in scope:
            return scope[name]
        if literal is not None:
            return literal
        raise ExpressionError(
            text, f"unknown name {name!r}; known: {', '.join(sorted(map(str, scope)))}", node.col_offset + 1
        )

    return lookup


def _unary(node: ast.UnaryOp, operand: Compiled, text: str) -> Compiled:
    if isinstance(node.op, ast.Not):
        return lambda scope, funcs: not operand(scope, funcs)
    negate, column = isinstance(node.op, ast.USub), node.col_offset + 1

    def arith(scope: Any, funcs: Any) -> Any:
        v = operand(scope, funcs)
        if v is None:
            raise ExpressionError(text, "arithmetic on a missing value", column)
        return -v if negate else +v

    return arith


def _binop(node: ast.BinOp, left: Compiled, right: Compiled, text: str) -> Compiled:
    op, column = _BINOPS[type(node.op)], node.col_offset + 1

    def binop(scope: Any, funcs: Any) -> Any:
        a, b = left(scope, funcs), right(scope, funcs)
        if a is None or b is None:
            raise ExpressionError(text, "arithmetic on a missing value", column)
        try:
            return op(a, b)
        except RepeatLimitError as exc:
            raise ExpressionError(text, str(exc), column) from None

    return binop


def _boolop(conjunction: bool, values: list[Compiled]) -> Compiled:
    if conjunction:

        def all_of(scope: Any, funcs: Any) -> Any:
            v: Any = True
            for e in values:
                v = e(scope, funcs)
                if not v:
                    return v
            return v

        return all_of

    def any_of(scope: Any, funcs: Any) -> Any:
        v: Any = False
        for e in values:
            v = e(scope, funcs)
            if v:
                return v
        return v

    return any_of


def _compare(node: ast.Compare, left: Compiled, comparators: list[Compiled]) -> Compiled:
    steps = [(_CMPOPS[type(op)], isinstance(op, (ast.Eq, ast.NotEq)), c) for op, c in zip(node.ops, comparators)]

    def compare(scope: Any, funcs: Any) -> bool:
        a = left(scope, funcs)
        for op, equality, comp in steps:
            b = comp(scope, funcs)
            if (a is None or b is None) and not equality:
                return False
            if not op(a, b):
                return False
            a = b
        return True

    return compare


def _call(name: str, args: list[Compiled]) -> Compiled:
    builtin = FUNCTIONS.get(name)
    if name in MEMO_CALLS:
        return _memo_call(name, builtin, args)

    def call(scope: Any, funcs: Any) -> Any:
        fn = funcs.get(name) if funcs else None
        if fn is None:
            fn = builtin if builtin is not None else FUNCTIONS[name]  # KeyError: an unbound extra function
        return fn(*[a(scope, funcs) for a in args])

    return call


def _memo_call(name: str, builtin: Callable[..., Any], args: list[Compiled]) -> Compiled:
    """A `MEMO_CALLS` built-in: when the scope has a `CALL_MEMO` dict, a call with the same argument
    objects as an earlier one in that scope returns the earlier result (a fact mapping's row computes
    `softmax(value)` for two slots once). Safe because the language cannot change a value in place;
    the memo keeps the arguments, so the objects compared by identity stay alive."""

    def call(scope: Any, funcs: Any) -> Any:
        fn = funcs.get(name) if funcs else None
        values = [a(scope, funcs) for a in args]
        if fn is not None:  # the caller's own function of that name: never memoised
            return fn(*values)
        memo = scope.get(CALL_MEMO)
        if memo is None:
            return builtin(*values)
        key = (name, *map(id, values))
        hit = memo.get(key)
        if hit is not None and all(x is y for x, y in zip(hit[0], values)):
            return hit[1]
        out = builtin(*values)
        memo[key] = (values, out)
        return out

    return call


def _reads_input(node: ast.AST) -> bool:
    """True for `input`, `input.a`, `input['a'][0]`...: a path into the run input, whose values are
    plain JSON (the input is checked to serialise as JSON before any node runs)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            return False
        node = node.value
    return isinstance(node, ast.Name) and node.id == "input"


def get_member(base: Any, key: Any) -> Any:
    """`base.key` / `base[key]` with missing values as None (dicts, lists, arrays, objects with `get_slot`)."""
    if base is None:
        return None
    if hasattr(base, "get_slot"):
        return base.get_slot(key)
    if isinstance(base, Mapping):
        return base.get(key)
    if isinstance(base, (list, tuple, np.ndarray)):
        if isinstance(key, (int, np.integer)) and -len(base) <= int(key) < len(base):
            return base[int(key)]
        return None
    return None
