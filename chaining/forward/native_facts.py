"""`WorkingMemory`'s common cases of asserting and reading facts in C (`native_facts.c`), optional: built by
`scripts/bootstrap.sh` (`python -m chaining.forward.native_build`, needs a C compiler and the
Python headers), used when present, with the Python loop as the fallback.

Why: asserting a request's facts through clipspy's cffi binding costs a handful of Python-level
calls per slot (`workbench bench rules` measured ~25 us for the gating benchmark's 5 facts and
10 slots, about a third of an evaluation). The C loop makes the same CLIPS calls (fact builder,
`Create*`) without Python in between. It covers template facts whose values are ints, floats,
plain symbol-like strings (a letter, then letters, digits, `-`, `_`) and non-empty lists of
those; any other fact is asserted by the Python code, which also words every error. Reading
facts back (`WorkingMemory.facts`) likewise: template facts whose slots hold symbols, strings,
integers, floats and multifields of those are read in C; an ordered fact or any other value is
read by Python.

A CPython extension module (the C loop reads Python dicts and lists, which cffi cannot hand to
C), built with setuptools; `_native_facts*.so` lands next to this file and is not committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rules.native_ext import build_extension, load_built, source_digest

SOURCE = Path(__file__).with_name("native_facts.c")


def _digest() -> str:
    """The digest this module's build must carry (a function, so tests can stand in another)."""
    return source_digest(SOURCE)


def _load() -> tuple[Any, str | None]:
    """(module, None) for the compiled module, or (None, why it is not used)."""
    return load_built(__package__, "_native_facts", _digest, "native_facts.c")


module, UNAVAILABLE = _load()
AVAILABLE = module is not None


def context(env: Any, fact_builder: Any, multifield_builder: Any) -> Any:
    """The C loop's context for one clipspy environment (`Environment._env`) and its builders.

    Raises:
        RuntimeError: the module is not built (`UNAVAILABLE` says why).
    """
    if module is None:
        raise RuntimeError(f"the C fact asserter is unavailable: {UNAVAILABLE}")
    from clips._clips import ffi, lib

    def address(p: Any) -> int:
        return int(ffi.cast("uintptr_t", p))

    names = (
        "FBSetDeftemplate",
        "FBPutSlot",
        "FBAssert",
        "FBAbort",
        "FactIndex",
        "CreateInteger",
        "CreateFloat",
        "CreateSymbol",
        "MBReset",
        "MBAppend",
        "MBCreate",
        "GetNextFact",
        "GetNextFactInTemplate",
        "FactDeftemplate",
        "GetFactSlot",
        "CreateString",
    )
    functions = tuple(address(ffi.addressof(lib, name)) for name in names)
    offsets = (
        ffi.offsetof("CLIPSLexeme", "contents"),
        ffi.offsetof("CLIPSInteger", "contents"),
        ffi.offsetof("CLIPSFloat", "contents"),
        ffi.offsetof("Multifield", "length"),
        ffi.offsetof("Multifield", "contents"),
    )
    if ffi.sizeof("CLIPSValue") != ffi.sizeof("void *"):  # the C code takes a CLIPSValue for one pointer
        raise RuntimeError("this clipspy's CLIPSValue is not one pointer; the C fact I/O does not apply")
    return module.context(address(env), address(fact_builder), address(multifield_builder), functions, offsets)


def build(verbose: bool = False) -> Path:
    """Compile `native_facts.c` into `_native_facts*.so` next to this file; returns its path.

    Raises:
        Exception (setuptools/compiler errors): no working C compiler or Python headers.
    """
    return build_extension("_native_facts", SOURCE, verbose)
