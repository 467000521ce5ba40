"""Rule text read in C (`native_read*.c`), optional: built by `scripts/bootstrap.sh` (`python -m
chaining.forward.native_build`; needs a C compiler and the Python headers), used by `rules.parser`
when present. The grammar (`clips.lark`, lark's LALR parser) stays the language's definition and
the fallback, construct by construct: the C reader stops at any construct it does not read exactly
as the grammar does (any syntax error, so every error message and location comes from the
grammar), the parser has the grammar read that construct alone (`rules.parser_lark.parse_piece`,
positions shifted to the file's) and the C reader goes on after it. tests/rules/test_native_read.py
checks both give the same AST, the same `kb check` output and the same located errors as the
grammar on the whole file, on every rule file in the repository and on mutations of them.

Why: a program of rule text (Manners: ~700 tokens, 3 KB) spent ~3.5 ms in lark's parser and
~0.6 ms turning its tree into the AST, where CLIPS's whole `load` takes ~0.6 ms. The C reader
tokenises as the grammar's contextual lexer does and builds the `rules.ast` objects directly.

A CPython extension module built with setuptools; `_native_read*.so` lands next to this file and
is not committed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from . import ast
from .native_ext import build_extension, load_built, source_digest

SOURCE = Path(__file__).with_name("native_read_constructs.c")
MORE = tuple(
    Path(__file__).with_name(n)
    for n in (
        "native_read.c",
        "native_read_exprs.c",
        "native_read_nodes.c",
        "native_read_lex.c",
        "native_read_scan.c",
        "native_read.h",
    )
)
CLASSES = (
    ast.Pos,
    ast.Atom,
    ast.Call,
    ast.Term,
    ast.FieldConstraint,
    ast.Wildcard,
    ast.SlotConstraint,
    ast.Pattern,
    ast.Test,
    ast.Not,
    ast.And,
    ast.Or,
    ast.Exists,
    ast.Forall,
    ast.Logical,
    ast.SlotAttribute,
    ast.SlotDef,
    ast.TemplateDef,
    ast.FactsDef,
    ast.RuleDef,
    ast.FunctionDef,
    ast.GlobalAssignment,
    ast.GlobalDef,
    ast.ModuleDef,
    ast.OpaqueConstruct,
    ast.Comment,
)
"""The AST classes the C reader builds, in the order of its `N_*` constants (native_read.h)."""


def _digest() -> str:
    """The digest this module's build must carry (a function, so tests can stand in another)."""
    return source_digest(SOURCE, *MORE)


def _load() -> tuple[Any, str | None]:
    """(module, None) for the compiled module, configured with the AST classes, or (None, why not)."""
    built, why = load_built(__package__, "_native_read", _digest, "native_read*.c")
    if built is None:
        return None, why
    try:
        built.configure(tuple((cls, tuple(f.name for f in dataclasses.fields(cls))) for cls in CLASSES), ast.NOPOS)
    except TypeError as exc:  # the AST's classes changed shape: the C reader must follow first
        return None, f"does not fit rules.ast ({exc})"
    return built, None


module, UNAVAILABLE = _load()
AVAILABLE = module is not None


def read(text: str) -> list[ast.Construct] | None:
    """The constructs of `text` as `rules.parser` builds them from the grammar's tree, or None when
    the C reader is not built or leaves some of this text to the grammar (see the module's docstring)."""
    if module is None:
        return None
    constructs, stop, duplicate = module.read(text, 0, 1, 0)
    return constructs if stop >= len(text) and duplicate is None else None


def read_from(text: str, pos: int, line: int, line_start: int) -> tuple[list[ast.Construct], int, tuple | None]:
    """The constructs of `text` from offset `pos` (on line `line`, which starts at `line_start`) up
    to the first one the C reader leaves to the grammar, with file positions: (constructs, stop,
    duplicate). `stop` is where the construct left to the grammar starts (its "(", or whatever
    other token stands between constructs), or `len(text)` when all were read. A deftemplate with
    a duplicate slot ends the reading after it: `stop` is then its end and `duplicate` is
    (line, column, slot, template) of the second slot (else None). Needs the C reader (`module`).

    Raises:
        ValueError: `pos` or `line_start` outside the text.
    """
    return module.read(text, pos, line, line_start)


def build(verbose: bool = False) -> Path:
    """Compile `native_read*.c` into `_native_read*.so` next to this file; returns its path.

    Raises:
        Exception (setuptools/compiler errors): no working C compiler or Python headers.
    """
    return build_extension("_native_read", SOURCE, verbose, MORE)
