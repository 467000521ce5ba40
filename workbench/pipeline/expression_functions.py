"""The built-in functions of the pipeline expression language (`workbench.pipeline.expressions`) and the
bounded `*`: pure functions of plain values and numpy arrays, no access to anything else."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def _to_plain(x: Any) -> Any:
    """numpy arrays and scalars to Python lists and numbers (JSON-ready)."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (list, tuple)):
        return [_to_plain(v) for v in x]
    return x


def _arr(x: Any) -> np.ndarray:
    if x is None:
        raise TypeError("value is missing (None)")
    return np.asarray(x, dtype=np.float64)


# The reductions below call numpy's ufuncs (`np.maximum.reduce`, `np.add.reduce`) directly: what
# `np.max`, `np.sum` and the array methods run, without their Python wrappers (about 1 us a call,
# ~40 calls per `demo_digits` run); same results and the same errors (tested value for value).
_MAX, _MIN, _ADD = np.maximum.reduce, np.minimum.reduce, np.add.reduce


def _softmax(x: Any) -> list[float]:
    a = _arr(x)
    e = np.exp(a - _MAX(a, axis=-1, keepdims=True))
    return (e / _ADD(e, axis=-1, keepdims=True)).tolist()


def _sigmoid(x: Any) -> Any:
    a = _arr(x)
    return (1.0 / (1.0 + np.exp(-a))).tolist()


def _cosine(a: Any, b: Any) -> float:
    x, y = _arr(a).ravel(), _arr(b).ravel()
    den = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y / den) if den else 0.0


def _topk(x: Any, k: int) -> list[int]:
    a = _arr(x).ravel()
    return [int(i) for i in np.argsort(-a, kind="stable")[: int(k)]]


def _coalesce(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _round(x: Any, n: int = 0) -> Any:
    return None if x is None else round(float(x), int(n))


# Pure functions available to every expression. Vectors are lists or numpy arrays.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "argmax": lambda x: int(_arr(x).argmax()),
    "argmin": lambda x: int(_arr(x).argmin()),
    "max": lambda *x: float(_MAX(_arr(x[0]), axis=None)) if len(x) == 1 else max(x),
    "min": lambda *x: float(_MIN(_arr(x[0]), axis=None)) if len(x) == 1 else min(x),
    "sum": lambda x: float(_ADD(_arr(x), axis=None)),
    "mean": lambda x: float(np.mean(_arr(x))),
    "softmax": _softmax,
    "sigmoid": _sigmoid,
    "cosine": _cosine,
    "dot": lambda a, b: float(_arr(a).ravel() @ _arr(b).ravel()),
    "norm": lambda x: float(np.linalg.norm(_arr(x))),
    "topk": _topk,
    "round": _round,
    "abs": lambda x: abs(x),
    "len": lambda x: len(x),
    "float": lambda x: None if x is None else float(x),
    "int": lambda x: None if x is None else int(x),
    "str": lambda x: None if x is None else str(x),
    "list": lambda x: _to_plain(x),
    "exp": lambda x: math.exp(float(x)),
    "log": lambda x: math.log(float(x)),
    "coalesce": _coalesce,
}

# Built-ins whose results are plain Python values already (numbers, strings, None, lists of them:
# `tolist()`, `float()`, `int()`): an expression that is one call of them is not walked by `_to_plain`
# (a softmax over 10 logits per digit was walked element by element). Not max/min/abs/coalesce,
# which can return their arguments as given (numpy values included).
PLAIN_RESULTS = frozenset(
    {"argmax", "argmin", "sum", "mean", "softmax", "sigmoid", "cosine", "dot", "norm", "topk", "round", "len"}
    | {"float", "int", "str", "list", "exp", "log"}
)

# Built-ins memoised per scope when the scope holds a `CALL_MEMO` dict (fact mappings' rows): pure,
# costly, and called twice with the same vector by `demo_digits` (`max(softmax(value))`, `softmax(value)`).
MEMO_CALLS = frozenset({"softmax", "sigmoid"})
CALL_MEMO = " calls"  # not a name an expression can read (names are identifiers)

#: The most items (characters of a string, elements of a list) `*` may make by repetition ("ab" * 3): as
#: simpleeval's MAX_STRING_LENGTH and CEL's size limits, so that a 40-byte request cannot build 200 MB.
MAX_REPEAT_ITEMS = 100_000


class RepeatLimitError(ValueError):
    """`*` on a string or list would make more than `MAX_REPEAT_ITEMS` items."""


def _times(a: Any, b: Any) -> Any:
    """`a * b`, refusing a repetition of a string or list past `MAX_REPEAT_ITEMS` items (numbers and numpy
    arrays multiply as in Python; an array times a number is element-wise, never a repetition)."""
    seq, n = (a, b) if isinstance(a, (str, list, tuple)) else (b, a)
    if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_REPEAT_ITEMS:
        kind = "string" if isinstance(seq, str) else "list"
        raise RepeatLimitError(
            f"'*' would repeat a {kind} of {len(seq)} item(s) {n} times ({len(seq) * n} items); "
            f"the limit is {MAX_REPEAT_ITEMS:,}"
        )
    return a * b
