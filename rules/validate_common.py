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


PORTED_KINDS = ("deftemplate", "deffunction", "defgeneric", "defglobal")


@dataclass(slots=True)
class Definitions:
    """What is defined so far, in load order (CLIPS sees constructs one after another).

    Modules (CLIPS BPG 10): `templates`, `functions`, `generics` and `globals` are the current module's
    view, its own constructs and those it imports; an import sees what the source module defines and
    what it imports in turn, as far as each export and import specification lets it through."""

    templates: dict[str, ast.TemplateDef] = field(default_factory=dict)
    template_where: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)  # MODULE::name -> where it is defined
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    generics: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    python_functions: set[str] = field(default_factory=set)
    modules: dict[str, set[tuple[str, str]]] = field(default_factory=lambda: {"MAIN": set()})
    used_templates: set[str] = field(default_factory=set)  # referenced by a rule or a fact: cannot be redefined
    module: str = "MAIN"
    # Every module's own constructs by kind (PORTED_KINDS), its imports and its used template names.
    module_own: dict[str, dict[str, dict[str, object]]] = field(default_factory=dict)
    module_imports: dict[str, list[tuple[str, set[tuple[str, str]]]]] = field(default_factory=dict)
    module_used: dict[str, set[str]] = field(default_factory=dict)
    # (kind, name) -> the module whose construct the current module sees under that name.
    homes: dict[tuple[str, str], str] = field(default_factory=dict)
    # Each module's views are computed once per change of module ports (`ports_generation`) and then
    # brought up to date from `log` (every construct defined, in order) when the module is entered again,
    # so a file whose constructs switch modules at every step is checked in linear time.
    log: list[tuple[str, str, str, object]] = field(default_factory=list)  # (kind, name, module, definition)
    ports_generation: int = 0
    views: dict[str, tuple[int, int, tuple]] = field(default_factory=dict)
    memo: dict[tuple[str, str], dict[str, tuple[str, object]]] = field(default_factory=dict)  # `visible`'s
    memo_stamp: tuple[int, int] = (0, 0)

    def enter_module(self, name: str) -> None:
        """Make `name` the current module (as CLIPS does on defmodule and on a construct named M::x):
        the views become what that module sees, `used_templates` its names in use."""
        if name == self.module or name not in self.modules:
            return
        self.module_used[self.module] = self.used_templates
        self.module = name
        self.used_templates = self.module_used.setdefault(name, set())
        self.refresh()

    def set_ports(self, name: str, exports: set[tuple[str, str]], imports: list) -> None:
        """Record a defmodule's export and import specifications."""
        self.modules[name] = exports
        self.module_imports[name] = imports
        self.ports_generation += 1

    def refresh(self) -> None:
        """Bring the current module's views up to date (a construct defined elsewhere may be imported here)."""
        cached = self.views.get(self.module)
        if cached is None or cached[0] != self.ports_generation:
            views = {kind: self.visible(self.module, kind) for kind in PORTED_KINDS}
            homes = {(kind, n): home for kind, view in views.items() for n, (home, _) in view.items()}
            state = (
                homes,
                {n: v for n, (_, v) in views["deftemplate"].items()},
                {n: v for n, (_, v) in views["deffunction"].items()},
                set(views["defgeneric"]),
                set(views["defglobal"]),
            )
        else:
            state = cached[2]
            for kind, name, home, definition in self.log[cached[1] :]:
                if home == self.module or (
                    (kind, name) not in state[0] and self.reaches(self.module, home, kind, name, frozenset())
                ):
                    self._add(state, kind, name, home, definition)
        self.views[self.module] = (self.ports_generation, len(self.log), state)
        self.homes, self.templates, self.functions, self.generics, self.globals = state  # type: ignore[assignment]

    @staticmethod
    def _add(state: tuple, kind: str, name: str, home: str, definition: object) -> None:
        homes, templates, functions, generics, globals_ = state
        homes[(kind, name)] = home
        if kind == "deftemplate":
            templates[name] = definition
        elif kind == "deffunction":
            functions[name] = definition
        elif kind == "defgeneric":
            generics.add(name)
        else:
            globals_.add(name)

    def reaches(self, module: str, source: str, kind: str, name: str, seen: frozenset[str]) -> bool:
        """Whether `module` sees `source`'s construct `name` of `kind` through its imports."""
        if module == source:
            return True
        if module in seen:
            return False
        for src, what in self.module_imports.get(module, ()):
            if (
                _ported(what, kind, name)
                and _ported(self.modules.get(src, set()), kind, name)
                and self.reaches(src, source, kind, name, seen | {module})
            ):
                return True
        return False

    def visible(self, module: str, kind: str, seen: frozenset[str] = frozenset()) -> dict[str, tuple[str, object]]:
        """{name: (defining module, definition)} of the constructs of `kind` that `module` sees."""
        out: dict[str, tuple[str, object]] = {}
        if module in seen:
            return out
        stamp = (self.ports_generation, len(self.log))
        if self.memo_stamp != stamp:
            self.memo.clear()
            self.memo_stamp = stamp
        hit = self.memo.get((module, kind))
        if hit is not None:
            return hit
        for source, what in self.module_imports.get(module, ()):
            offered = self.modules.get(source, set())
            for n, found in self.visible(source, kind, seen | {module}).items():
                if _ported(offered, kind, n) and _ported(what, kind, n):
                    out.setdefault(n, found)
        out.update((n, (module, d)) for n, d in self.module_own.get(module, {}).get(kind, {}).items())
        self.memo[(module, kind)] = out
        return out

    def imported_from(self, kind: str, name: str) -> str | None:
        """The other module whose `kind` construct `name` the current module imports (None: none)."""
        home = self.homes.get((kind, name))
        return home if home is not None and home != self.module else None

    def sees(self, kind: str, qualified: str) -> bool:
        """Whether `M::name` names a construct of module M that the current module sees."""
        module, _, name = qualified.rpartition("::")
        return self.homes.get((kind, name)) == module

    def hidden(self, kind: str, name: str) -> str:
        """For messages: where a `kind` construct `name` the current module cannot see is defined ('' if nowhere)."""
        where = sorted(m for m, own in self.module_own.items() if name in own.get(kind, {}) and m != self.module)
        if not where:
            return ""
        return (
            f"; module {', '.join(where)} defines it, but module {self.module} does not see it (the {kind} must "
            f"be exported by its module and imported by {self.module})"
        )

    def define(self, kind: str, name: str, definition: object) -> None:
        """Record the current module's own construct and add it to the view."""
        self.module_own.setdefault(self.module, {}).setdefault(kind, {})[name] = definition
        self.log.append((kind, name, self.module, definition))  # other modules' views catch up on entry
        self._add(
            (self.homes, self.templates, self.functions, self.generics, self.globals),
            kind,
            name,
            self.module,
            definition,
        )

    def add_template(self, name: str, t: ast.TemplateDef) -> None:
        self.define("deftemplate", name, t)


def _ported(spec: set[tuple[str, str]], kind: str, name: str) -> bool:
    """Whether an export/import specification ({(kind, name)}, "*" for ?ALL) covers construct `name`."""
    return any(k in (kind, "*") and n in (name, "*") for k, n in spec)


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

    def import_conflict(self, kind: str, name: str, pos: ast.Pos) -> bool:
        """Report a construct named like one the current module imports ([CSTRCPSR3]); True when so."""
        source = self.defs.imported_from(kind, name)  # type: ignore[attr-defined]
        if source is None:
            return False
        self.error(
            pos,
            f"[CSTRCPSR3] Cannot define {kind} '{name}' because of an import/export conflict: module "
            f"{self.defs.module} imports the {kind} '{name}' of module {source}",  # type: ignore[attr-defined]
        )
        return True

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


_PARAMETER = re.compile(r"\$?\?([^\s()\"&|~;<]+)")


def repeated_parameter(fn: ast.FunctionDef) -> ast.Pos:
    """Where a deffunction's parameter list repeats a name (`(?a $?a)`: the second), from its text;
    the construct's position when the text does not show it."""
    text, i, n = fn.text, 1, len(fn.text)
    while i < n and text[i] != "(":  # the parameter list: the first '(' outside the comment string
        if text[i] == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        i += 1
    end = text.find(")", i)
    seen: set[str] = set()
    for m in _PARAMETER.finditer(text, i, end if end > 0 else n):
        if m[1] in seen:
            off = m.start()
            nl = text.rfind("\n", 0, off)
            line = fn.pos.line + text.count("\n", 0, off)
            column = off - nl if nl >= 0 else fn.pos.column + off
            return ast.Pos(line, column, line, column + len(m[0]))
        seen.add(m[1])
    return fn.pos
