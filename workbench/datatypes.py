"""Tensor datatypes as the front ends name them, from the one table the model runtime keeps.

The API may not import `neural` directly (pyproject.toml, import-linter contract
`front-ends-through-workbench`), so it reaches `neural.signature.V2_DATATYPES` here: the Open
Inference Protocol (KServe v2) datatype of each numpy dtype name a signature uses (`"float32"` ->
`"FP32"`, `"string"` and `"object"` -> `"BYTES"`).
"""

from __future__ import annotations

from neural.signature import V2_DATATYPES

__all__ = ["V2_DATATYPES"]
