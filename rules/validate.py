"""Static validation of parsed CLIPS modules, and each rule's reads and writes.

Checks what CLIPS itself would reject at load time and a little more: unknown templates and
slots, constants that break a slot's type / allowed values / range, slot attributes that are
malformed, undefined functions, wrong argument counts (built-in arities are CLIPS's own, see
`rules.builtins`), variables used before they are bound, undefined globals, duplicated rule or
template names, and calls to functions that reach the operating system (`rules.safety`).
Definitions are visible from the point they appear, as in CLIPS (which reads constructs in
order). Nothing is evaluated.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import ast
from .builtins import BUILTIN_ARG_TYPES, BUILTIN_ARITY
from .errors import Diagnostic
from .safety import UNSAFE_FUNCTIONS

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
_TYPE_EXPANSION = {
    "LEXEME": {"SYMBOL", "STRING"},
    "NUMBER": {"INTEGER", "FLOAT"},
    "INSTANCE": {"INSTANCE-NAME", "INSTANCE-ADDRESS"},
}
_ATOM_TYPE = {
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
_TYPE_LETTER = {"symbol": "y", "string": "s", "integer": "l", "float": "d", "instance_name": "n"}
_LETTER_NAMES = {
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
_CONTROL = {
    "if",
    "while",
    "loop-for-count",
    "progn$",
    "foreach",
    "switch",
    "bind",
    "assert",
    "modify",
    "duplicate",
    "retract",
    "progn",
    "return",
    "break",
}
_FACT_QUERIES = {
    "do-for-fact",
    "do-for-all-facts",
    "delayed-do-for-all-facts",
    "find-fact",
    "find-all-facts",
    "any-factp",
}
_INSTANCE_QUERIES = {
    "do-for-instance",
    "do-for-all-instances",
    "delayed-do-for-all-instances",
    "find-instance",
    "find-all-instances",
    "any-instancep",
}
# COOL functions whose arguments include slot overrides `(slot value)` that are not calls.
_SLOT_OVERRIDE_FUNCS = {
    "make-instance",
    "modify-instance",
    "active-modify-instance",
    "message-modify-instance",
    "active-message-modify-instance",
    "duplicate-instance",
    "active-duplicate-instance",
    "message-duplicate-instance",
    "active-message-duplicate-instance",
    "initialize-instance",
    "active-initialize-instance",
    "active-make-instance",
}


@dataclass(slots=True)
class Definitions:
    """What is defined so far, in load order (CLIPS sees constructs one after another)."""

    templates: dict[str, ast.TemplateDef] = field(default_factory=dict)
    template_where: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    generics: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    python_functions: set[str] = field(default_factory=set)
    modules: dict[str, set[tuple[str, str]]] = field(default_factory=lambda: {"MAIN": set()})


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)")


def bare(name: str) -> str:
    """`MAIN::person` -> `person`."""
    return name.rsplit("::", 1)[-1]


class Validator:
    """Collects diagnostics for a sequence of modules; also fills each RuleDef's reads/writes."""

    def __init__(self, *, allow_unsafe: bool = False, functions: Iterable[str] = ()):
        self.allow_unsafe = allow_unsafe
        self.defs = Definitions(python_functions=set(functions))
        self.diagnostics: list[Diagnostic] = []
        self.unsafe: list[Diagnostic] = []
        self.file = "<string>"

    # -- reporting
    def error(self, pos: ast.Pos, message: str) -> None:
        self.diagnostics.append(Diagnostic(self.file, pos.line, pos.column, message))

    def _slot_hint(self, name: str, tmpl: ast.TemplateDef) -> str:
        return self._suggest(name, tmpl.slots) or " (slots: " + ", ".join(tmpl.slots) + ")"

    def _suggest(self, name: str, options: Iterable[str]) -> str:
        close = difflib.get_close_matches(name, list(options), n=1)
        return f"; did you mean '{close[0]}'?" if close else ""

    # -- entry
    def run(self, modules: list[ast.Module]) -> list[Diagnostic]:
        for m in modules:
            self.file = m.filename
            for c in m.constructs:
                self.construct(c)
        return self.diagnostics

    def construct(self, c: ast.Construct) -> None:
        name = getattr(c, "name", None) if not isinstance(c, ast.OpaqueConstruct) else None
        if isinstance(c, ast.OpaqueConstruct) and c.kind != "definstances" and c.items:
            first = c.items[0]
            if not (isinstance(first, ast.Atom) and first.kind == "symbol") or _NUMBER.fullmatch(str(first.value)):
                self.error(first.pos, f"{c.kind} needs a name (a symbol), got {_show(first)}")
        if isinstance(name, str) and _NUMBER.fullmatch(name):
            self.error(c.pos, f"a construct name must be a symbol, not the number {name}")
        if isinstance(c, ast.TemplateDef):
            self.template(c)
        elif isinstance(c, ast.FactsDef):
            for f in c.facts:
                self.fact_spec(f, set(), None, "deffacts")
        elif isinstance(c, ast.RuleDef):
            self.rule(c)
        elif isinstance(c, ast.FunctionDef):
            self.function(c)
        elif isinstance(c, ast.GlobalDef):
            for a in c.assignments:
                self.expr(a.value, set(), None)
                self.defs.globals.add(a.name)
        elif isinstance(c, ast.ModuleDef):
            self.module(c)
        else:
            self.opaque(c)

    # -- defmodule
    def module(self, m: ast.ModuleDef) -> None:
        """Port specifications: (export|import [MODULE] ?ALL|?NONE|TYPE ?ALL|?NONE|NAME...)."""
        exports: set[tuple[str, str]] = set()
        for spec in m.specs:
            head = spec.head
            if head not in ("export", "import"):
                self.error(spec.pos, f"defmodule {m.name}: expected (export ...) or (import ...), got {_show(spec)}")
                continue
            args = spec.args
            if head == "import":
                if not args or not (isinstance(args[0], ast.Atom) and args[0].kind == "symbol"):
                    self.error(spec.pos, f"defmodule {m.name}: import needs a module name")
                    continue
                source = str(args[0].value)
                if source not in self.defs.modules:
                    self.error(args[0].pos, f"defmodule {m.name} imports from unknown module '{source}'")
                    continue
                args = args[1:]
            else:
                source = None
            what = self._port(m, spec, args)
            if what is None:
                continue
            if head == "export":
                exports |= what
            else:
                offered = self.defs.modules[source]  # type: ignore[index]
                for kind, name in what:
                    if not any((k in (kind, "*")) and (n in (name, "*")) for k, n in offered) and name != "*":
                        self.error(spec.pos, f"module '{source}' does not export the {kind} '{name}'")
                    elif name == "*" and not offered:
                        self.error(spec.pos, f"module '{source}' does not export any constructs")
        self.defs.modules[m.name] = exports

    def _port(self, m: ast.ModuleDef, spec: ast.Call, args: list[ast.Expr]) -> set[tuple[str, str]] | None:
        kinds = ("deftemplate", "defclass", "deffunction", "defgeneric", "defglobal")
        words = [a for a in args if isinstance(a, ast.Atom)]
        if len(words) != len(args) or not args:
            self.error(spec.pos, f"defmodule {m.name}: bad {spec.head} specification {_show(spec)}")
            return None
        first = words[0]
        if first.kind == "variable" and first.value in ("ALL", "NONE") and len(words) == 1:
            return {("*", "*")} if first.value == "ALL" else set()
        if first.kind == "symbol" and first.value in kinds and len(words) >= 2:
            rest = words[1:]
            if len(rest) == 1 and rest[0].kind == "variable" and rest[0].value in ("ALL", "NONE"):
                return {(str(first.value), "*")} if rest[0].value == "ALL" else set()
            if all(w.kind == "symbol" for w in rest):
                return {(str(first.value), str(w.value)) for w in rest}
        self.error(
            spec.pos,
            f"defmodule {m.name}: bad {spec.head} specification {_show(spec)}; expected ?ALL, "
            f"?NONE, or a construct type ({', '.join(kinds)}) with ?ALL, ?NONE or names",
        )
        return None

    # -- deftemplate
    def template(self, t: ast.TemplateDef) -> None:
        name = bare(t.name)
        if name in self.defs.templates:
            self.error(t.pos, f"deftemplate {name} is already defined at {self.defs.template_where[name]}")
        if name in RESERVED_RELATIONS:
            self.error(t.pos, f"'{name}' is a reserved word and cannot name a deftemplate")
        for s in t.slots.values():
            if _NUMBER.fullmatch(s.name):
                self.error(s.pos, f"a slot name must be a symbol, not the number {s.name} (deftemplate {name})")
            self.slot_def(t, s)
        self.defs.templates[name] = t
        self.defs.template_where[name] = f"{self.file}:{t.pos.line}:{t.pos.column}"

    def slot_def(self, t: ast.TemplateDef, s: ast.SlotDef) -> None:
        seen: set[str] = set()
        allowed_kinds = []
        for a in s.attributes:
            where = f"slot '{s.name}' of deftemplate {t.name}"
            if a.name not in SLOT_ATTRS:
                self.error(
                    a.pos,
                    f"unknown slot attribute '{a.name}' in {where}; expected one of: {', '.join(sorted(SLOT_ATTRS))}",
                )
                continue
            if a.name in seen:
                self.error(a.pos, f"attribute '{a.name}' given twice in {where}")
            seen.add(a.name)
            is_var_any = (
                len(a.values) == 1
                and isinstance(a.values[0], ast.Atom)
                and a.values[0].kind == "variable"
                and a.values[0].value == "VARIABLE"
            )
            if a.name == "type":
                covered: set[str] = set()
                for v in a.values:
                    if isinstance(v, ast.Atom) and v.value in TYPE_NAMES:
                        kinds_v = _TYPE_EXPANSION.get(str(v.value), {str(v.value)})
                        if kinds_v & covered:
                            self.error(v.pos, f"bad constraint: type {v.value} overlaps another type in {where}")
                        covered |= kinds_v
                if not a.values:
                    self.error(a.pos, f"bad constraint: (type) needs at least one type name in {where}")
                for v in a.values:
                    if is_var_any:
                        break
                    if not (isinstance(v, ast.Atom) and v.kind == "symbol" and v.value in TYPE_NAMES):
                        self.error(
                            v.pos,
                            f"bad constraint: unknown type {_show(v)} in {where}; expected one of: "
                            f"{', '.join(sorted(TYPE_NAMES))} or ?VARIABLE",
                        )
            elif a.name in ALLOWED_ATTRS:
                allowed_kinds.append(a)
                kinds = ALLOWED_ATTRS[a.name]
                if not a.values:
                    self.error(a.pos, f"bad constraint: ({a.name}) needs at least one value in {where}")
                for v in a.values:
                    if is_var_any:
                        break
                    ok = isinstance(v, ast.Atom) and v.kind in (kinds or set(_ATOM_TYPE))
                    if not ok:
                        self.error(v.pos, f"bad constraint: {_show(v)} is not allowed in ({a.name} ...) of {where}")
            elif a.name == "range":
                nums = [
                    v.value if isinstance(v, ast.Atom) and v.kind in ("integer", "float") else None for v in a.values
                ]
                if len(a.values) != 2 or any(
                    n is None and not (isinstance(v, ast.Atom) and v.kind == "variable" and v.value == "VARIABLE")
                    for n, v in zip(nums, a.values)
                ):
                    self.error(a.pos, f"bad constraint: (range LOW HIGH) needs two numbers or ?VARIABLE in {where}")
                elif nums[0] is not None and nums[1] is not None and nums[0] > nums[1]:
                    self.error(a.pos, f"bad constraint: range low {nums[0]} is greater than high {nums[1]} in {where}")
            elif a.name == "cardinality":
                if not s.multislot:
                    self.error(a.pos, f"bad constraint: cardinality applies only to multislots, not {where}")
                ints = [v.value if isinstance(v, ast.Atom) and v.kind == "integer" else None for v in a.values]
                if len(a.values) != 2 or any(
                    n is None
                    and not (isinstance(v, ast.Atom) and v.kind == "variable" and v.value == "VARIABLE")
                    or (n is not None and n < 0)
                    for n, v in zip(ints, a.values)
                ):
                    self.error(
                        a.pos,
                        f"bad constraint: (cardinality MIN MAX) needs two non-negative integers "
                        f"or ?VARIABLE in {where}",
                    )
                elif ints[0] is not None and ints[1] is not None and ints[0] > ints[1]:
                    self.error(a.pos, f"bad constraint: cardinality minimum exceeds maximum in {where}")
            elif a.name in ("default", "default-dynamic"):
                if "default" in seen and "default-dynamic" in seen:
                    self.error(a.pos, f"default and default-dynamic both given in {where}")
                special = (
                    len(a.values) == 1
                    and isinstance(a.values[0], ast.Atom)
                    and a.values[0].kind == "variable"
                    and a.values[0].value in ("NONE", "DERIVE")
                )
                if not special:
                    if not s.multislot and len(a.values) != 1:
                        self.error(a.pos, f"single-field {where} needs exactly one default value, got {len(a.values)}")
                    for v in a.values:
                        self.expr(v, set(), None)
                        if isinstance(v, ast.Atom) and v.kind in _ATOM_TYPE:
                            self.check_value(v, s, t.name)
        if len(allowed_kinds) > 1 and any(a.name == "allowed-values" for a in allowed_kinds):
            self.error(
                allowed_kinds[1].pos,
                f"bad constraint: allowed-values cannot be combined with other allowed- "
                f"attributes in slot '{s.name}' of deftemplate {t.name}",
            )

    def check_value(self, v: ast.Atom, s: ast.SlotDef, template: str) -> None:
        """Report a constant that violates the slot's type, allowed values or range."""
        atype = _ATOM_TYPE.get(v.kind)
        if atype is None:
            return
        declared = set()
        for tname in s.types:
            declared |= _TYPE_EXPANSION.get(tname, {tname})
        where = f"slot '{s.name}' of {template}"
        if declared and atype not in declared:
            self.error(v.pos, f"{_show(v)} has type {atype} but {where} allows {' '.join(s.types)}")
            return
        for a in s.attributes:
            if a.name not in ALLOWED_ATTRS or a.name == "allowed-classes":
                continue
            vals = [x for x in a.values if isinstance(x, ast.Atom)]
            if any(x.kind == "variable" for x in vals):
                continue
            kinds = ALLOWED_ATTRS[a.name]
            if kinds is not None and v.kind not in kinds:
                continue
            if not any(_same_const(v, x) for x in vals):
                shown = " ".join(_show(x) for x in vals)
                self.error(v.pos, f"{_show(v)} is not an allowed value of {where} ({a.name} {shown})")
                return
        r = s.range
        if r is not None and v.kind in ("integer", "float"):
            lo, hi = r
            if (lo is not None and v.value < lo) or (hi is not None and v.value > hi):  # type: ignore[operator]
                self.error(
                    v.pos,
                    f"{_show(v)} is outside the range {lo if lo is not None else '?VARIABLE'}.."
                    f"{hi if hi is not None else '?VARIABLE'} of {where}",
                )

    # -- defrule
    def rule(self, r: ast.RuleDef) -> None:
        name = bare(r.name)
        if name in self.defs.rules:
            self.error(r.pos, f"defrule {name} is already defined at {self.defs.rules[name]}")
        self.defs.rules[name] = f"{self.file}:{r.pos.line}:{r.pos.column}"
        r.reads, r.asserts, r.modifies, r.retracts = set(), set(), set(), set()
        for d in r.declarations:
            head = d.head
            if head == "salience":
                if len(d.args) != 1:
                    self.error(d.pos, f"(salience N) takes one value in rule {name}")
                elif isinstance(d.args[0], ast.Atom):
                    a = d.args[0]
                    if a.kind == "integer":
                        if not -10000 <= int(a.value) <= 10000:
                            self.error(a.pos, f"salience {a.value} is outside -10000..10000 in rule {name}")
                    elif a.kind != "global":
                        self.error(
                            a.pos, f"salience must be an integer or an expression, got {_show(a)} in rule {name}"
                        )
                    else:
                        self.expr(a, set(), None)
                else:
                    self.expr(d.args[0], set(), None)
            elif head == "auto-focus":
                if len(d.args) != 1 or not (isinstance(d.args[0], ast.Atom) and d.args[0].value in ("TRUE", "FALSE")):
                    self.error(d.pos, f"(auto-focus TRUE|FALSE) expected in rule {name}")
            else:
                self.error(
                    d.pos,
                    f"unknown declaration {_show(d.items[0]) if d.items else '()'} in rule {name}; "
                    "expected (salience N) or (auto-focus TRUE|FALSE)",
                )
        seen_other = False
        for ce in r.lhs:
            if isinstance(ce, ast.Logical):
                if seen_other:
                    self.error(ce.pos, f"logical CEs must be placed first in rule {name}")
            else:
                seen_other = True
        addresses: dict[str, str | None] = {}
        bound = self.ces(r.lhs, set(), r, addresses, negated=False)
        bound = set(bound) | _bind_targets(r.rhs)  # CLIPS accepts a bind anywhere in the RHS
        for action in r.rhs:
            self.expr(action, bound, r, addresses)

    def ces(self, ces: list[ast.CE], bound: set[str], r: ast.RuleDef, addresses: dict, negated: bool) -> set[str]:
        for ce in ces:
            bound = self.ce(ce, bound, r, addresses, negated)
        return bound

    def ce(self, ce: ast.CE, bound: set[str], r: ast.RuleDef, addresses: dict, negated: bool) -> set[str]:
        if isinstance(ce, ast.Pattern):
            return self.pattern(ce, bound, r, addresses, negated)
        if isinstance(ce, ast.Test):
            self.call_expected(ce.call, "test")
            self.expr(ce.call, bound, r, addresses, lhs=True)
            return bound
        if isinstance(ce, ast.Not):
            self.ce(ce.ce, set(bound), r, addresses, True)
            return bound
        if isinstance(ce, (ast.And, ast.Logical)):
            return self.ces(ce.ces, bound, r, addresses, negated)
        if isinstance(ce, ast.Exists):
            self.ces(ce.ces, set(bound), r, addresses, True)
            return bound
        if isinstance(ce, ast.Forall):
            if len(ce.ces) < 2:
                self.error(ce.pos, f"forall needs at least two conditional elements in rule {r.name}")
            self.ces(ce.ces, set(bound), r, addresses, True)
            return bound
        assert isinstance(ce, ast.Or)
        results = [self.ce(c, set(bound), r, addresses, negated) for c in ce.ces]
        return set.intersection(*results) if results else bound

    def pattern(
        self, p: ast.Pattern, bound: set[str], r: ast.RuleDef | None, addresses: dict, negated: bool
    ) -> set[str]:
        name = bare(p.template)
        bound = set(bound)
        if _NUMBER.fullmatch(name):
            self.error(p.template_pos, f"the first field of a pattern must be a symbol, got {name}")
        if name in RESERVED_RELATIONS and p.ordered and name != "object":
            self.error(p.template_pos, f"'{name}' cannot start a pattern here")
        tmpl = self.defs.templates.get(name)
        if r is not None:
            r.reads.add(name)
        if not p.ordered:
            if tmpl is None and name != "object":
                self.error(p.template_pos, f"unknown template '{name}'{self._suggest(name, self.defs.templates)}")
            for sc in p.slots:
                slot = tmpl.slots.get(sc.name) if tmpl else None
                if tmpl is not None and slot is None:
                    self.error(sc.pos, f"template {name} has no slot '{sc.name}'{self._slot_hint(sc.name, tmpl)}")
                if slot is not None and not slot.multislot:
                    n_multi = sum(
                        1
                        for f in sc.fields
                        if (isinstance(f, ast.Wildcard) and f.multifield)
                        or (isinstance(f, ast.FieldConstraint) and f.is_multifield)
                    )
                    if len(sc.fields) != 1 or n_multi:
                        self.error(
                            sc.pos,
                            f"single-field slot '{sc.name}' of {name} needs exactly one single-field "
                            f"constraint, got {len(sc.fields)} field(s)"
                            + (" with a multifield variable" if n_multi else ""),
                        )
                for f in sc.fields:
                    self.field(f, bound, r, slot, name)
        else:
            if tmpl is not None and tmpl.slots and p.fields:
                self.error(
                    p.template_pos,
                    f"{name} is a deftemplate with slots ({', '.join(tmpl.slots)}); "
                    f"match it as ({name} (slot value) ...)",
                )
            for f in p.fields:
                self.field(f, bound, r, None, name)
        if p.address:
            if negated:
                self.error(
                    p.address_pos, f"a fact address (?{p.address} <-) cannot be bound inside not, exists or forall"
                )
            bound.add(p.address)
            addresses[p.address] = name
        return bound

    def field(self, f: ast.Field, bound: set[str], r: ast.RuleDef | None, slot: ast.SlotDef | None, tname: str) -> None:
        if isinstance(f, ast.Wildcard):
            return
        multi_alts = len(f.alternatives) > 1
        for ai, alt in enumerate(f.alternatives):
            for i, t in enumerate(alt):
                if t.kind in ("variable", "mf_variable"):
                    var = str(t.value.value)  # type: ignore[union-attr]
                    if var not in bound:
                        # CLIPS: a leading variable binds the whole field (`?x&red|blue` is ?x & (red|blue)).
                        if ai == 0 and i == 0 and not t.negated:
                            bound.add(var)
                        else:
                            self.error(t.pos, f"variable ?{var} is used before it is bound")
                elif t.kind in ("predicate", "return_value"):
                    assert isinstance(t.value, ast.Call)
                    self.call_expected(t.value, ":" if t.kind == "predicate" else "=")
                    self.expr(t.value, bound, r, lhs=True)
                elif slot is not None and not t.negated and len(alt) == 1 and not multi_alts:
                    self.check_value(t.value, slot, tname)  # type: ignore[arg-type]

    def call_expected(self, e: ast.Expr, where: str) -> None:
        if not isinstance(e, ast.Call) or e.head is None:
            self.error(e.pos, f"expected a function call after {where}, got {_show(e)}")

    # -- deffunction
    def function(self, fn: ast.FunctionDef) -> None:
        name = bare(fn.name)
        if name in BUILTIN_ARITY or name in UNSAFE_FUNCTIONS:
            self.error(fn.pos, f"deffunction {name} would redefine the built-in function {name}")
        self.defs.functions[name] = fn  # visible in its own body: recursion
        bound = set(fn.params) | ({fn.wildcard} if fn.wildcard else set()) | _bind_targets(fn.body)
        for e in fn.body:
            self.expr(e, bound, None)

    # -- opaque constructs: only the safety scan, plus generic function names
    def opaque(self, c: ast.OpaqueConstruct) -> None:
        if c.kind in ("defgeneric", "defmethod") and c.name:
            self.defs.generics.add(bare(c.name))

        def scan(e: ast.Expr) -> None:
            if isinstance(e, ast.Call):
                if e.head is not None:
                    self.safety(e)
                for i in e.items:
                    scan(i)

        for i in c.items:
            scan(i)

    # -- expressions
    def safety(self, call: ast.Call) -> bool:
        """Report an unsafe call; True when the call may proceed."""
        head = call.head
        if head is None or self.allow_unsafe:
            return True
        reason = UNSAFE_FUNCTIONS.get(head)
        if (
            head == "funcall"
            and call.args
            and isinstance(call.args[0], ast.Atom)
            and call.args[0].kind in ("symbol", "string")
            and str(call.args[0].value) not in UNSAFE_FUNCTIONS
        ):
            return True
        if reason is None:
            return True
        d = Diagnostic(
            self.file,
            call.items[0].pos.line,
            call.items[0].pos.column,
            f"unsafe function '{head}' ({reason}) is refused; allow_unsafe=True (CLI --allow-unsafe, setting "
            "WORKBENCH_ALLOW_UNSAFE_RULES) permits it",
        )
        self.diagnostics.append(d)
        self.unsafe.append(d)
        return False

    def expr(
        self, e: ast.Expr, bound: set[str], r: ast.RuleDef | None, addresses: dict | None = None, lhs: bool = False
    ) -> None:
        addresses = addresses if addresses is not None else {}
        if isinstance(e, ast.Atom):
            if e.kind in ("variable", "mf_variable"):
                var = str(e.value).split(":", 1)[0]
                if var not in bound:
                    self.error(
                        e.pos,
                        f"variable ?{var} is used but never bound"
                        + (" before this point" if lhs else (f" on the left-hand side of rule {r.name}" if r else "")),
                    )
            elif e.kind == "global" and e.value not in self.defs.globals:
                self.error(e.pos, f"global variable ?*{e.value}* is not defined by any defglobal")
            elif e.kind in ("wildcard", "mf_wildcard"):
                self.error(e.pos, "a wildcard cannot be used as a value in an expression")
            return
        head = e.head
        if head is None:
            self.error(e.pos, f"expected a function name after '(', got {_show(e.items[0]) if e.items else ')'}")
            return
        if not self.safety(e):
            return
        args = e.args
        name_pos = e.items[0].pos
        if head in _CONTROL:
            self.control(e, head, args, bound, r, addresses)
            return
        if head in _FACT_QUERIES or head in _INSTANCE_QUERIES:
            self.query(e, args, bound, r, addresses, facts=head in _FACT_QUERIES)
            return
        self.arity(head, len(args), name_pos)
        self.arg_types(head, args)
        if head in _SLOT_OVERRIDE_FUNCS:
            for a in args:
                if isinstance(a, ast.Call) and a.head is not None and not self.known_function(a.head):
                    for v in a.args:
                        self.expr(v, bound, r, addresses, lhs)
                else:
                    self.expr(a, bound, r, addresses, lhs)
            return
        for a in args:
            self.expr(a, bound, r, addresses, lhs)

    def known_function(self, name: str) -> bool:
        n = bare(name)
        return (
            n in BUILTIN_ARITY or n in self.defs.functions or n in self.defs.generics or n in self.defs.python_functions
        )

    def arity(self, head: str, n: int, pos: ast.Pos) -> None:
        name = bare(head)
        fn = self.defs.functions.get(name)
        if fn is not None:
            lo, hi = len(fn.params), None if fn.wildcard else len(fn.params)
        elif name in self.defs.generics or name in self.defs.python_functions:
            return
        elif name in BUILTIN_ARITY:
            lo, hi = BUILTIN_ARITY[name]
        else:
            options = [*BUILTIN_ARITY, *self.defs.functions, *self.defs.python_functions]
            self.error(pos, f"undefined function '{name}'{self._suggest(name, options)}")
            return
        if n < lo or (hi is not None and n > hi):
            want = f"exactly {lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            self.error(pos, f"function '{name}' expects {want} argument{'s' if (hi or lo) != 1 else ''}, got {n}")

    def arg_types(self, head: str, args: list[ast.Expr]) -> None:
        """Constant arguments of built-ins must have a type CLIPS allows there (CLIPS checks this statically)."""
        name = bare(head)
        if name in self.defs.functions or name in self.defs.generics or name not in BUILTIN_ARG_TYPES:
            return
        default, per = BUILTIN_ARG_TYPES[name]
        for i, a in enumerate(args):
            if not (isinstance(a, ast.Atom) and a.kind in _TYPE_LETTER):
                continue
            letters = per[i] if i < len(per) else default
            if letters in ("", "*") or _TYPE_LETTER[a.kind] in letters:
                continue
            allowed = " or ".join(_LETTER_NAMES[ch] for ch in letters if ch in _LETTER_NAMES)
            self.error(a.pos, f"function '{name}' expects argument #{i + 1} to be {allowed}, got {_show(a)}")

    def control(
        self, e: ast.Call, head: str, args: list[ast.Expr], bound: set[str], r: ast.RuleDef | None, addresses: dict
    ) -> None:
        pos = e.items[0].pos
        if head == "bind":
            if not args or not (
                isinstance(args[0], ast.Atom) and args[0].kind in ("variable", "mf_variable", "global")
            ):
                self.error(pos, "bind expects a variable and a value: (bind ?x value)")
                return
            for a in args[1:]:
                self.expr(a, bound, r, addresses)
            if args[0].kind == "global":
                if args[0].value not in self.defs.globals:
                    self.error(args[0].pos, f"global variable ?*{args[0].value}* is not defined by any defglobal")
            else:
                bound.add(str(args[0].value))
            return
        if head == "assert":
            if not args:
                self.error(pos, "assert expects at least one fact")
            for a in args:
                self.fact_spec(a, bound, r, "assert", addresses)
            return
        if head in ("modify", "duplicate"):
            if not args:
                self.error(pos, f"{head} expects a fact address and slot values")
                return
            target = args[0]
            if isinstance(target, ast.Atom) and target.kind not in ("variable", "integer"):
                self.error(target.pos, f"{head} expects a fact address (?f) or a fact index, got {_show(target)}")
                return
            self.expr(target, bound, r, addresses)
            tname = (
                addresses.get(str(target.value)) if isinstance(target, ast.Atom) and target.kind == "variable" else None
            )
            tmpl = self.defs.templates.get(tname) if tname else None
            if r is not None and tname:
                (r.modifies if head == "modify" else r.asserts).add(tname)
            for a in args[1:]:
                if not isinstance(a, ast.Call) or a.head is None:
                    self.error(a.pos, f"{head} expects (slot value...) after the fact address, got {_show(a)}")
                    continue
                slot = tmpl.slots.get(a.head) if tmpl else None
                if tmpl is not None and slot is None:
                    self.error(
                        a.items[0].pos, f"template {tname} has no slot '{a.head}'{self._suggest(a.head, tmpl.slots)}"
                    )
                for v in a.args:
                    self.expr(v, bound, r, addresses)
                    if slot is not None and isinstance(v, ast.Atom):
                        self.check_value(v, slot, tname or "")
            return
        if head == "retract":
            if not args:
                self.error(pos, "retract expects at least one fact address or index")
            for a in args:
                if isinstance(a, ast.Atom) and a.kind == "symbol" and a.value == "*":
                    continue

                self.expr(a, bound, r, addresses)
                if r is not None and isinstance(a, ast.Atom) and a.kind == "variable":
                    t = addresses.get(str(a.value))
                    if t:
                        r.retracts.add(t)
            return
        if head == "if":
            if not args:
                self.error(pos, "if expects a condition: (if COND then ACTION... [else ACTION...])")
                return
            self.expr(args[0], bound, r, addresses)
            rest = args[1:]
            if not rest or not _is_sym(rest[0], "then"):
                self.error(pos, "if expects 'then' after its condition")
            for a in rest[1:]:
                if _is_sym(a, "else"):
                    continue
                self.expr(a, bound, r, addresses)
            return
        if head == "while":
            if not args:
                self.error(pos, "while expects a condition")
                return
            for a in args:
                if not _is_sym(a, "do"):
                    self.expr(a, bound, r, addresses)
            return
        if head == "foreach":
            if len(args) < 2 or not (isinstance(args[0], ast.Atom) and args[0].kind == "variable"):
                self.error(pos, "foreach expects a variable and a multifield: (foreach ?x EXPR ACTION...)")
                return
            self.expr(args[1], bound, r, addresses)
            var = str(args[0].value)
            bound.update({var, var + "-index"})
            for a in args[2:]:
                self.expr(a, bound, r, addresses)
            return
        if head in ("loop-for-count", "progn$"):
            if not args:
                self.error(pos, f"{head} expects a range or a list")
                return
            spec, body = args[0], args[1:]
            inner = bound
            if (
                isinstance(spec, ast.Call)
                and spec.items
                and isinstance(spec.items[0], ast.Atom)
                and spec.items[0].kind == "variable"
            ):
                for a in spec.items[1:]:
                    self.expr(a, bound, r, addresses)
                var = str(spec.items[0].value)
                bound.add(var)
                if head != "loop-for-count":
                    bound.add(var + "-index")
            else:
                self.expr(spec, bound, r, addresses)
            for a in body:
                if not _is_sym(a, "do"):
                    self.expr(a, inner, r, addresses)
            return
        if head == "switch":
            if not args:
                self.error(pos, "switch expects a value")
                return
            self.expr(args[0], bound, r, addresses)
            for clause in args[1:]:
                if not isinstance(clause, ast.Call) or clause.head not in ("case", "default"):
                    self.error(clause.pos, "switch expects (case VALUE then ACTION...) or (default ACTION...)")
                    continue
                items = clause.args
                if clause.head == "case":
                    if not items:
                        self.error(clause.pos, "case expects a value")
                        continue
                    self.expr(items[0], bound, r, addresses)
                    items = items[1:]
                for a in items:
                    if not _is_sym(a, "then"):
                        self.expr(a, bound, r, addresses)
            return
        # progn, return, break
        self.arity(head, len(args), pos)
        for a in args:
            self.expr(a, bound, r, addresses)

    def query(
        self, e: ast.Call, args: list[ast.Expr], bound: set[str], r: ast.RuleDef | None, addresses: dict, facts: bool
    ) -> None:
        if not args or not isinstance(args[0], ast.Call):
            self.error(e.pos, f"{e.head} expects a template list such as ((?f person))")
            return
        inner = set(bound)
        for spec in args[0].items:
            if not (
                isinstance(spec, ast.Call)
                and len(spec.items) >= 2
                and isinstance(spec.items[0], ast.Atom)
                and spec.items[0].kind == "variable"
            ):
                self.error(spec.pos, f"{e.head} expects (?var template...) in its template list")
                continue
            inner.add(str(spec.items[0].value))
            for t in spec.items[1:]:
                if facts and isinstance(t, ast.Atom) and t.kind == "symbol":
                    tn = bare(str(t.value))
                    if tn not in self.defs.templates:
                        self.error(t.pos, f"unknown template '{tn}'{self._suggest(tn, self.defs.templates)}")
                    elif r is not None:
                        r.reads.add(tn)
        for a in args[1:]:
            self.expr(a, inner, r, addresses)

    def fact_spec(
        self, f: ast.Expr, bound: set[str], r: ast.RuleDef | None, where: str, addresses: dict | None = None
    ) -> None:
        """Check `(relation value...)` or `(template (slot value...)...)` as in deffacts and assert."""
        addresses = addresses if addresses is not None else {}
        if not isinstance(f, ast.Call) or f.head is None:
            self.error(
                f.pos,
                f"{where} expects a fact such as (relation value...) or (template (slot value)...), got {_show(f)}",
            )
            return
        name = bare(f.head)
        name_pos = f.items[0].pos
        if _NUMBER.fullmatch(name):
            self.error(name_pos, f"a fact's first field must be a symbol, got {name}")
        if name in RESERVED_RELATIONS:
            self.error(name_pos, f"'{name}' cannot name a fact")
        tmpl = self.defs.templates.get(name)
        if r is not None:
            r.asserts.add(name)
        if tmpl is None or not tmpl.slots:
            for a in f.args:
                if isinstance(a, ast.Call) and a.head is not None and not self.known_function(a.head):
                    self.error(
                        name_pos,
                        f"unknown template '{name}': ({a.head} ...) looks like a slot, but no "
                        f"deftemplate {name} is defined{self._suggest(name, self.defs.templates)}",
                    )
                    return
                self.expr(a, bound, r, addresses)
            return
        given = set()
        for a in f.args:
            if not isinstance(a, ast.Call) or a.head is None:
                self.error(a.pos, f"{name} is a deftemplate: give slot values as (slot value), got {_show(a)}")
                continue
            slot = tmpl.slots.get(a.head)
            if slot is None:
                self.error(a.items[0].pos, f"template {name} has no slot '{a.head}'{self._slot_hint(a.head, tmpl)}")
                continue
            if a.head in given:
                self.error(a.items[0].pos, f"slot '{a.head}' given twice in {where} of {name}")
            given.add(a.head)
            if not slot.multislot and len(a.args) != 1:
                self.error(
                    a.items[0].pos, f"single-field slot '{a.head}' of {name} needs exactly one value, got {len(a.args)}"
                )
            for v in a.args:
                self.expr(v, bound, r, addresses)
                if isinstance(v, ast.Atom):
                    self.check_value(v, slot, name)
        for sname, slot in tmpl.slots.items():
            d = slot.attribute("default")
            if (
                sname not in given
                and d is not None
                and len(d.values) == 1
                and isinstance(d.values[0], ast.Atom)
                and d.values[0].kind == "variable"
                and d.values[0].value == "NONE"
            ):
                self.error(name_pos, f"slot '{sname}' of {name} requires a value (default ?NONE)")


def _bind_targets(exprs: list[ast.Expr]) -> set[str]:
    """Variables a body binds anywhere with (bind ?x ...)."""
    out: set[str] = set()

    def walk(e: ast.Expr) -> None:
        if isinstance(e, ast.Call):
            if (
                e.head == "bind"
                and e.args
                and isinstance(e.args[0], ast.Atom)
                and e.args[0].kind in ("variable", "mf_variable")
            ):
                out.add(str(e.args[0].value))
            for i in e.items:
                walk(i)

    for e in exprs:
        walk(e)
    return out


def _is_sym(e: ast.Expr, word: str) -> bool:
    return isinstance(e, ast.Atom) and e.kind == "symbol" and e.value == word


def _same_const(a: ast.Atom, b: ast.Atom) -> bool:
    if a.kind in ("integer", "float") and b.kind in ("integer", "float"):
        return a.value == b.value
    return a.kind == b.kind and a.value == b.value


def _show(e: ast.Expr) -> str:
    from .printer import expr_text

    text = expr_text(e)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def validate(
    modules: list[ast.Module], *, allow_unsafe: bool = False, functions: Iterable[str] = ()
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Validate modules in load order. Returns (all diagnostics, the subset about unsafe functions).

    Also fills `RuleDef.reads/asserts/modifies/retracts` in place.
    """
    v = Validator(allow_unsafe=allow_unsafe, functions=functions)
    v.run(modules)
    return v.diagnostics, v.unsafe
