"""The trace recorder in C (`native_trace.c`), optional: built once by `scripts/bootstrap.sh`
(`python -m chaining.forward.native_build`, needs a C compiler and the Python headers), used by
`ClipsRunner` when present, with the Python callbacks (`clips_runner`) as the fallback.

Why: a Python callback per firing and per fact change costs microseconds each (`workbench
bench rules` measured the firing trace at ~3.5 us per firing on Waltz, where CLIPS itself needs
~10 us per firing). The C callbacks record into growable buffers without calling Python; the
runner reads the buffers once after the run.

Built with cffi's API mode (the way cffi recommends for C code of one's own); the compiled
module `_native_trace*.so` lands next to this file and is not committed (.gitignore).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from rules.native_ext import install, source_digest

SOURCE = Path(__file__).with_name("native_trace.c")


def _digest() -> str:
    """The digest this module's build must carry (a function, so tests can stand in another)."""
    return source_digest(SOURCE)


CDEF = """
typedef struct wb_trace {
    void (*pp_form)(void *activation, void *sb);
    const char *(*rule_name)(void *activation);
    void (*sb_reset)(void *sb);
    long long (*fact_index)(void *fact);
    void *sb;
    int recording;
    long long fired;
    long long *firings;
    size_t firings_len, firings_cap;
    int bad_format;
    long long *events;
    size_t n_events, events_cap;
    int out_of_memory;
    char **names;
    size_t n_names, names_cap;
    const char **name_keys;
    size_t *name_ids;
    size_t table_cap;
    int direct;
    size_t lexeme_contents_offset;
    long long checked;
    unsigned char *rule_checked;
    size_t rule_checked_cap;
    void *(*get_focus)(void *env);
    const char *(*module_name)(void *module);
    const char **module_keys;
} wb_trace;

const char *wb_source_digest(void);
void wb_on_fire(void *env, void *activation, void *context);
void wb_count_fire(void *env, void *activation, void *context);
void wb_on_assert(void *env, void *fact, void *context);
void wb_on_retract(void *env, void *fact, void *context);
void wb_clear(wb_trace *t, size_t keep);
void wb_free(wb_trace *t);
const char *wb_name(wb_trace *t, size_t id);
"""


def _load() -> tuple[Any, Any, str | None]:
    """(ffi, lib, None) for the compiled module, or (None, None, why it is not used)."""
    try:
        from . import _native_trace  # type: ignore[attr-defined]
    except ImportError as exc:
        return None, None, f"not built ({exc}); run `bash scripts/bootstrap.sh` with a C compiler"
    try:
        built_from = _native_trace.ffi.string(_native_trace.lib.wb_source_digest()).decode()
    except AttributeError:  # built before the digest existed
        built_from = None
    if built_from != _digest():
        return None, None, "built from another version of native_trace.c; run `bash scripts/bootstrap.sh` again"
    return _native_trace.ffi, _native_trace.lib, None


ffi, lib, UNAVAILABLE = _load()
AVAILABLE = lib is not None


def build(verbose: bool = False) -> Path:
    """Compile `native_trace.c` into `_native_trace*.so` next to this file; returns its path.

    Raises:
        cffi.VerificationError (or a compiler error): no working C compiler or Python headers.
    """
    from cffi import FFI

    builder = FFI()
    builder.cdef(CDEF)
    source = SOURCE.read_text() + f'\nconst char *wb_source_digest(void) {{ return "{_digest()}"; }}\n'
    builder.set_source("_native_trace", source, extra_compile_args=["-O2"])
    with tempfile.TemporaryDirectory() as tmp:
        built = Path(builder.compile(tmpdir=tmp, verbose=verbose))
        return install(built, SOURCE.parent)
