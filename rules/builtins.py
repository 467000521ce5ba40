"""CLIPS 6.4.2 built-in functions: arities and argument types (data in `builtin_arity` and `builtin_types`).

Generated once at development time from clipspy 1.0.6 (CLIPS 6.4.2) with
`(get-function-list)` and `(get-function-restrictions NAME)`; written here as data so the
validator needs no CLIPS environment at run time.

BUILTIN_ARITY: name -> (min_args, max_args or None for unlimited). Special forms (if, bind,
assert, ...) report (0, None) and are checked by the validator itself.
BUILTIN_ARG_TYPES: name -> (default types, per-argument types), CLIPS restriction letters:
l integer, d float, s string, y symbol, n instance name, m multifield, f fact address,
i instance address, x external address, * or "" any.
"""

from __future__ import annotations

from .builtin_arity import BUILTIN_ARITY
from .builtin_types import BUILTIN_ARG_TYPES

__all__ = ["BUILTIN_ARITY", "BUILTIN_ARG_TYPES"]
