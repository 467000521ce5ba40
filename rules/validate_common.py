"""Shared parts of rule validation: type and attribute tables, what is defined so far, reporting."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import ast
from .errors import Diagnostic

TYPE_NAMES = {
    "SYMBOL",
    "STRING",
    "LEXEME",
    "INTEGER",
    "FLOAT",
    "NUMBER",
    "INSTANCE-NAME",
    "INSTANCE-ADDRESS",
    "INSTANCE",
    "FACT-ADDRESS",
    "EXTERNAL-ADDRESS",
}
TYPE_EXPANSION = {
    "LEXEME": {"SYMBOL", "STRING"},
    "NUMBER": {"INTEGER", "FLOAT"},
    "INSTANCE": {"INSTANCE-NAME", "INSTANCE-ADDRESS"},
}
ATOM_TYPE = {
    "symbol": "SYMBOL",
    "string": "STRING",
    "integer": "INTEGER",
    "float": "FLOAT",
    "instance_name": "INSTANCE-NAME",
}
ALLOWED_ATTRS = {
    "allowed-values": None,
    "allowed-symbols": {"symbol"},
    "allowed-strings": {"string"},
    "allowed-lexemes": {"symbol", "string"},
    "allowed-integers": {"integer"},
    "allowed-floats": {"float"},
    "allowed-numbers": {"integer", "float"},
    "allowed-instance-names": {"instance_name"},
    "allowed-classes": {"symbol"},
}
TYPE_LETTER = {"symbol": "y", "string": "s", "integer": "l", "float": "d", "instance_name": "n"}
LETTER_NAMES = {
    "l": "an integer",
    "d": "a float",
    "s": "a string",
    "y": "a symbol",
    "n": "an instance name",
    "m": "a multifield",
    "f": "a fact address",
    "i": "an instance address",
    "x": "an external address",
}
SLOT_ATTRS = {"default", "default-dynamic", "type", "range", "cardinality", *ALLOWED_ATTRS}
RESERVED_RELATIONS = {"test", "not", "and", "or", "exists", "forall", "logical", "declare", "object"}


@dataclass(slots=True)
class Definitions:
    """What is defined so far, in load order (CLIPS sees constructs one after another)."""

    templates: dict[str, ast.TemplateDef] = field(default_factory=dict)
    template_where: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)  # MODULE::name -> where it is defined
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    generics: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    python_functions: set[str] = field(default_factory=set)
    modules: dict[str, set[tuple[str, str]]] = field(default_factory=lambda: {"MAIN": set()})
    used_templates: set[str] = field(default_factory=set)  # referenced by a rule or a fact: cannot be redefined
    # Modules: `templates` and `used_templates` are the current module's view (its own templates and
    # those it imports); every module's own templates, its imports and its used names are kept here.
    module: str = "MAIN"
    module_templates: dict[str, dict[str, ast.TemplateDef]] = field(default_factory=lambda: {"MAIN": {}})
    module_imports: dict[str, list[tuple[str, set[tuple[str, str]]]]] = field(default_factory=dict)
    module_used: dict[str, set[str]] = field(default_factory=dict)

    def enter_module(self, name: str) -> None:
        """Make `name` the current module (as CLIPS does on defmodule and on a construct named M::x):
        `templates` becomes what that module sees, `used_templates` its names in use."""
        if name == self.module or name not in self.modules:
            return
        self.module_used[self.module] = self.used_templates
        self.module = name
        self.used_templates = self.module_used.setdefault(name, set())
        seen: dict[str, ast.TemplateDef] = {}
        for source, what in self.module_imports.get(name, ()):
            offered = self.modules.get(source, set())
            for tname, t in self.module_templates.get(source, {}).items():
                if _ported(offered, tname) and _ported(what, tname):
                    seen.setdefault(tname, t)
        seen.update(self.module_templates.setdefault(name, {}))
        self.templates = seen

    def add_template(self, name: str, t: ast.TemplateDef) -> None:
        self.templates[name] = t
        self.module_templates.setdefault(self.module, {})[name] = t


def _ported(spec: set[tuple[str, str]], name: str) -> bool:
    """Whether an export/import specification ({(kind, name)}, "*" for ?ALL) covers deftemplate `name`."""
    return any(k in ("deftemplate", "*") and n in (name, "*") for k, n in spec)


NUMBER = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)")


def bare(name: str) -> str:
    """`MAIN::person` -> `person`."""
    return name.rsplit("::", 1)[-1]


class Reporter:
    """Diagnostics collected in order; `file` is the file being validated."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.file = "<string>"
        self.in_deffacts = False
        # Inside a rule: what CLIPS knows of each LHS variable's type (restriction letters), and
        # the variables the RHS rebinds (whose type is then unknown).
        self.var_types: dict[str, str] = {}
        self.rebound: set[str] = set()

    def error(self, pos: ast.Pos, message: str) -> None:
        self.diagnostics.append(Diagnostic(self.file, pos.line, pos.column, message))

    def warning(self, pos: ast.Pos, message: str) -> None:
        """A problem CLIPS reports but loads past (the file is accepted unless strict)."""
        self.diagnostics.append(Diagnostic(self.file, pos.line, pos.column, message, "warning"))

    def _slot_hint(self, name: str, tmpl: ast.TemplateDef) -> str:
        return self._suggest(name, tmpl.slots) or " (slots: " + ", ".join(tmpl.slots) + ")"

    def _suggest(self, name: str, options: Iterable[str]) -> str:
        close = difflib.get_close_matches(name, list(options), n=1)
        return f"; did you mean '{close[0]}'?" if close else ""


def bind_targets(exprs: list[ast.Expr]) -> set[str]:
    """Variables a body binds anywhere with (bind ?x ...) (iterative: any nesting depth)."""
    out: set[str] = set()
    stack = list(exprs)
    call, atom = ast.Call, ast.Atom
    while stack:
        e = stack.pop()
        if type(e) is call:
            items = e.items
            if len(items) > 1:
                first, var = items[0], items[1]
                if (
                    type(first) is atom
                    and first.kind == "symbol"
                    and first.value == "bind"
                    and type(var) is atom
                    and var.kind in ("variable", "mf_variable")
                ):
                    out.add(str(var.value))
            stack.extend(items)
    return out


_SLOT_TYPE_LETTERS = {
    "SYMBOL": "y",
    "STRING": "s",
    "LEXEME": "sy",
    "INTEGER": "l",
    "FLOAT": "d",
    "NUMBER": "ld",
    "INSTANCE-NAME": "n",
    "INSTANCE-ADDRESS": "i",
    "INSTANCE": "ni",
    "FACT-ADDRESS": "f",
    "EXTERNAL-ADDRESS": "x",
}


def slot_type_letters(slot: ast.SlotDef | None) -> str:
    """Restriction letters of a slot's declared types ('' when any type is allowed)."""
    if slot is None or not slot.attributes or not slot.types or "?VARIABLE" in slot.types:
        return ""
    return "".join(_SLOT_TYPE_LETTERS.get(t, "") for t in slot.types)


def looks_like_variable(name: str) -> bool:
    """`?x`, `$?x`, `?`, `$?`: the lexer may read these as symbols where no variable can stand."""
    return name.startswith(("?", "$?"))


def is_sym(e: ast.Expr, word: str) -> bool:
    return isinstance(e, ast.Atom) and e.kind == "symbol" and e.value == word


def same_const(a: ast.Atom, b: ast.Atom) -> bool:
    """Equal constants as CLIPS compares them (an integer equals the float of the same value)."""
    if a.kind in ("integer", "float") and b.kind in ("integer", "float"):
        return a.value == b.value
    return a.kind == b.kind and a.value == b.value


def show(e: ast.Expr) -> str:
    """A short quoted rendering of an expression for messages."""
    from .printer import expr_text

    text = expr_text(e)
    return repr(text if len(text) <= 40 else text[:37] + "...")
