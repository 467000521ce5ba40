"""The expression built-ins that call numpy's ufunc reductions directly (`np.maximum.reduce`,
`np.add.reduce`, the array's `argmax`) give what `np.max`, `np.sum`, `np.argmax` and the reference
softmax give, value for value and error for error: facts and explanations keep their last bits."""

from __future__ import annotations

import warnings

import numpy as np

from workbench.pipeline.expressions import FUNCTIONS


def _reference_softmax(x):
    a = np.asarray(x, dtype=np.float64)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).tolist()


REFERENCE = {
    "argmax": lambda x: int(np.argmax(np.asarray(x, dtype=np.float64))),
    "argmin": lambda x: int(np.argmin(np.asarray(x, dtype=np.float64))),
    "max": lambda x: float(np.max(np.asarray(x, dtype=np.float64))),
    "min": lambda x: float(np.min(np.asarray(x, dtype=np.float64))),
    "sum": lambda x: float(np.sum(np.asarray(x, dtype=np.float64))),
    "softmax": _reference_softmax,
}


def _outcome(fn, x):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("value", repr(fn(x)))
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))


def test_reductions_match_numpys_public_functions():
    rng = np.random.default_rng(7)
    inf, nan = float("inf"), float("nan")
    values = [5.0, [1.0], [], [3, 1, 2], [[1, 5], [7, 2]], [nan, 1.0], [1.0, nan], [-0.0, 0.0], [0.0, -0.0]]
    values += [[1e308, 1e308], [1e308, -1e308], [inf, 1.0], [-inf, -inf], np.float32([1.5, 2.5]), [True, 2]]
    values += [rng.normal(size=10).astype(np.float32) * 8 for _ in range(300)]
    values += [rng.normal(size=(3, 7)) * 30 for _ in range(50)] + [rng.random(64).tolist() for _ in range(50)]
    for name, reference in REFERENCE.items():
        for x in values:
            assert _outcome(FUNCTIONS[name], x) == _outcome(reference, x), (name, x)
