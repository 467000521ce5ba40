"""Plain-data deffacts read in C (`native_scan.c`), optional: built by `scripts/bootstrap.sh`
(`python -m chaining.forward.native_build`, which builds the engine's C parts and this one; needs
a C compiler and the Python headers), used by `rules.scan` when present, with its regular
expressions as the fallback and the reference (tests/rules/test_native_scan.py checks both agree).

Why: a data-heavy file (Waltz 50's 7,200 `line` facts, 240 KB) spent ~7 ms in the regular
expression that recognises a data deffacts and ~7 ms in the passes that find its facts' shapes,
where CLIPS's whole `load` takes ~8 ms. The C functions make one pass each, for ASCII text; any
other text is read by the regular expressions.

A CPython extension module built with setuptools; `_native_scan*.so` lands next to this file and
is not committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .native_ext import build_extension, load_built, source_digest

SOURCE = Path(__file__).with_name("native_scan.c")


def _digest() -> str:
    """The digest this module's build must carry (a function, so tests can stand in another)."""
    return source_digest(SOURCE)


def _load() -> tuple[Any, str | None]:
    """(module, None) for the compiled module, or (None, why it is not used)."""
    return load_built(__package__, "_native_scan", _digest, "native_scan.c")


module, UNAVAILABLE = _load()
AVAILABLE = module is not None


def build(verbose: bool = False) -> Path:
    """Compile `native_scan.c` into `_native_scan*.so` next to this file; returns its path.

    Raises:
        Exception (setuptools/compiler errors): no working C compiler or Python headers.
    """
    return build_extension("_native_scan", SOURCE, verbose)
