"""Static validation of parsed CLIPS modules, and each rule's reads and writes.

Checks what CLIPS itself would reject at load time and a little more: unknown templates and
slots, constants that break a slot's type / allowed values / range, slot attributes that are
malformed, undefined functions, wrong argument counts (built-in arities are CLIPS's own, see
`rules.builtins`), variables used before they are bound, undefined globals, duplicated rule or
template names, and calls to functions that reach the operating system (`rules.safety`).
Definitions are visible from the point they appear, as in CLIPS (which reads constructs in
order). Nothing is evaluated.

Split by job: `validate_common` (tables, definitions, reporting), `validate_slots`
(deftemplates and slot values), `validate_exprs` (expressions and special forms), `validate_data`
(plain-data deffacts read without building them); this module
has the constructs and left-hand sides.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import ast
from .builtins import BUILTIN_ARITY
from .errors import Diagnostic
from .safety import UNSAFE_FUNCTIONS
from .scan import FactData
from .validate_common import (
    ALLOWED_ATTRS,
    ATOM_TYPE,
    NUMBER,
    RESERVED_RELATIONS,
    SLOT_ATTRS,
    TYPE_NAMES,
    Definitions,
    bare,
    bind_targets,
    is_sym,
    looks_like_variable,
    repeated_parameter,
    show,
    slot_type_letters,
)
from .validate_data import DataChecks
from .validate_exprs import ExprChecks
from .validate_slots import SlotChecks

__all__ = [
    "ALLOWED_ATTRS",
    "ATOM_TYPE",
    "RESERVED_RELATIONS",
    "SLOT_ATTRS",
    "TYPE_NAMES",
    "Definitions",
    "Validator",
    "bare",
    "validate",
]


class Validator(DataChecks, SlotChecks, ExprChecks):
    """Collects diagnostics for a sequence of modules; also fills each RuleDef's reads/writes."""

    def __init__(self, *, allow_unsafe: bool = False, functions: Iterable[str] = ()):
        super().__init__()
        self.allow_unsafe = allow_unsafe
        self.defs = Definitions(python_functions=set(functions))
        self.unsafe: list[Diagnostic] = []
        self._lhs_var_kinds: dict[str, str] = {}  # variable -> "variable" | "mf_variable" in the rule's LHS
        self.skipped: list[ast.Construct] = []  # constructs CLIPS reports and skips while loading the rest
        self._plain_names: set[str] = set()  # pattern relation names with nothing to report

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
            if not (isinstance(first, ast.Atom) and first.kind == "symbol") or NUMBER.fullmatch(str(first.value)):
                self.error(first.pos, f"{c.kind} needs a name (a symbol), got {show(first)}")
        if isinstance(name, str) and NUMBER.fullmatch(name):
            self.error(c.pos, f"a construct name must be a symbol, not the number {name}")
        elif isinstance(name, str) and looks_like_variable(name):
            self.error(c.pos, f"[CSTRCPSR2] missing name: a construct name must be a symbol, not {name}")
        if isinstance(name, str) and "::" in name and not isinstance(c, ast.ModuleDef):
            self.defs.enter_module(name.split("::", 1)[0])  # CLIPS: M::x makes M the current module
        if isinstance(c, ast.TemplateDef):
            self.template(c)
        elif isinstance(c, ast.FactsDef):
            data = c.facts if isinstance(c.facts, FactData) else None
            if data is None or not (
                self.data_facts(data) if data.flat else self.template_shapes(data) or self.template_data(data)
            ):
                self.in_deffacts = True
                try:
                    for f in c.facts:
                        self.drive(self.fact_spec(f, set(), None, "deffacts"))
                finally:
                    self.in_deffacts = False
        elif isinstance(c, ast.RuleDef):
            self.rule(c)
        elif isinstance(c, ast.FunctionDef):
            self.function(c)
        elif isinstance(c, ast.GlobalDef):
            if c.module:
                self.defs.enter_module(c.module)  # CLIPS: (defglobal M ...) makes M the current module
            for a in c.assignments:
                self.expr(a.value, set(), None)
                if self.import_conflict("defglobal", a.name, a.pos):
                    continue
                self.defs.define("defglobal", a.name, a)
        elif isinstance(c, ast.ModuleDef):
            self.module(c)
        else:
            self.opaque(c)

    # -- defmodule
    def module(self, m: ast.ModuleDef) -> None:
        """Port specifications: (export|import [MODULE] ?ALL|?NONE|TYPE ?ALL|?NONE|NAME...)."""
        exports: set[tuple[str, str]] = set()
        imports: list[tuple[str, set[tuple[str, str]]]] = []
        for spec in m.specs:
            head = spec.head
            if head not in ("export", "import"):
                self.error(spec.pos, f"defmodule {m.name}: expected (export ...) or (import ...), got {show(spec)}")
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
                imports.append((source, what))  # type: ignore[arg-type]
                offered = self.defs.modules[source]  # type: ignore[index]
                for kind, name in what:
                    if not any((k in (kind, "*")) and (n in (name, "*")) for k, n in offered) and name != "*":
                        self.error(spec.pos, f"module '{source}' does not export the {kind} '{name}'")
                    elif name == "*" and not offered:
                        self.error(spec.pos, f"module '{source}' does not export any constructs")
        self.defs.set_ports(m.name, exports, imports)
        if m.name == self.defs.module:  # (defmodule MAIN ...) redefining the current module
            self.defs.module = ""
        self.defs.enter_module(m.name)

    def _port(self, m: ast.ModuleDef, spec: ast.Call, args: list[ast.Expr]) -> set[tuple[str, str]] | None:
        kinds = ("deftemplate", "defclass", "deffunction", "defgeneric", "defglobal")
        words = [a for a in args if isinstance(a, ast.Atom)]
        if len(words) != len(args) or not args:
            self.error(spec.pos, f"defmodule {m.name}: bad {spec.head} specification {show(spec)}")
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
            f"defmodule {m.name}: bad {spec.head} specification {show(spec)}; expected ?ALL, "
            f"?NONE, or a construct type ({', '.join(kinds)}) with ?ALL, ?NONE or names",
        )
        return None

    # -- defrule
    def rule(self, r: ast.RuleDef) -> None:
        name = bare(r.name)
        r.module = r.name.split("::", 1)[0] if "::" in r.name else self.defs.module
        key = f"{r.module}::{name}"  # a rule's name is its module's: M1::r and M2::r are two rules in CLIPS
        if key in self.defs.rules:
            self.warning(r.pos, f"defrule {name} redefines the one at {self.defs.rules[key]}; CLIPS replaces it")
        self.defs.rules[key] = f"{self.file}:{r.pos.line}:{r.pos.column}"
        r.reads, r.asserts, r.modifies, r.retracts = set(), set(), set(), set()
        declared: set[str] = set()
        for d in r.declarations:
            head = d.head
            if head in declared and head in ("salience", "auto-focus"):
                self.error(d.pos, f"[PRNTUTIL5] the {head} declaration has already been parsed in rule {name}")
                continue
            declared.add(head or "")
            if head == "salience":
                if len(d.args) != 1:
                    self.error(d.pos, f"(salience N) takes one value in rule {name}")
                elif isinstance(d.args[0], ast.Atom):
                    a = d.args[0]
                    if a.kind == "integer":
                        if not -10000 <= int(a.value) <= 10000:
                            self.error(a.pos, f"salience {a.value} is outside -10000..10000 in rule {name}")
                    elif a.kind != "global":
                        self.error(a.pos, f"salience must be an integer or an expression, got {show(a)} in rule {name}")
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
                    f"unknown declaration {show(d.items[0]) if d.items else '()'} in rule {name}; "
                    "expected (salience N) or (auto-focus TRUE|FALSE)",
                )
        misplaced = misplaced_logical(r.lhs)
        if misplaced is not None:
            self.error(misplaced.pos, f"logical CEs must be placed first in rule {name}")
        addresses: dict[str, str | None] = {}
        self._lhs_var_kinds = {}
        self.var_types, self.rebound = {}, bind_targets(r.rhs)
        try:
            bound = self.ces(r.lhs, set(), r, addresses, negated=False)
            bound = set(bound) | self.rebound  # CLIPS accepts a bind anywhere in the RHS
            for action in r.rhs:
                self.expr(action, bound, r, addresses)
        finally:
            self.var_types, self.rebound = {}, set()

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
        if p.template not in self._plain_names:
            self._pattern_name(p, name)
        tmpl = self.defs.templates.get(name)
        self.defs.used_templates.add(name)
        if r is not None:
            r.reads.add(name)
        if not p.ordered:
            if tmpl is None and name == "declare" and r is not None:  # CLIPS reads a later (declare ...) as a pattern
                self.error(p.template_pos, "(declare ...) must be the first element of a rule's left-hand side")
            elif tmpl is None and p.address and name in RESERVED_RELATIONS - {"object"}:  # ?f <- (not ...)
                self.error(p.template_pos, f"a fact address (?{p.address} <-) binds a fact pattern, not a ({name} ...)")
            elif tmpl is None and name != "object":
                self.error(p.template_pos, f"unknown template '{name}'{self._suggest(name, self.defs.templates)}")
            for sc in p.slots:
                slot = tmpl.slots.get(sc.name) if tmpl else None
                if tmpl is not None and slot is None:
                    self.error(sc.pos, f"template {name} has no slot '{sc.name}'{self._slot_hint(sc.name, tmpl)}")
                if slot is not None and not slot.multislot and (len(sc.fields) != 1 or _multifield(sc.fields[0])):
                    n_multi = sum(1 for f in sc.fields if _multifield(f))
                    self.error(
                        sc.pos,
                        f"single-field slot '{sc.name}' of {name} needs exactly one single-field "
                        f"constraint, got {len(sc.fields)} field(s)"
                        + (" with a multifield variable" if n_multi else ""),
                    )
                for f in sc.fields:
                    self.field(f, bound, r, slot, name)
                if slot is not None and slot.multislot and (card := slot.cardinality) is not None:
                    self._pattern_cardinality(sc, card, name)
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
            self.var_types[p.address] = "f"
        return bound

    def _pattern_name(self, p: ast.Pattern, name: str) -> None:
        """Report a pattern's relation name CLIPS refuses; remember a name with nothing to report."""
        if "::" in p.template:
            self.error(
                p.template_pos,
                f"[MODULDEF1] illegal use of the module specifier in {p.template}: a pattern names its deftemplate "
                f"without a module ({name}); the template must be visible in the rule's module",
            )
        if NUMBER.fullmatch(name):
            self.error(p.template_pos, f"the first field of a pattern must be a symbol, got {name}")
        if name in RESERVED_RELATIONS and p.ordered and name != "object":
            self.error(p.template_pos, f"'{name}' cannot start a pattern here")
        if name in ("=", ":") or looks_like_variable(name):
            self.error(p.template_pos, f"[PRNTUTIL2] the first field of a pattern must be a symbol, got {name}")
        elif "::" not in p.template and not NUMBER.fullmatch(name) and name not in RESERVED_RELATIONS:
            self._plain_names.add(p.template)

    def field(self, f: ast.Field, bound: set[str], r: ast.RuleDef | None, slot: ast.SlotDef | None, tname: str) -> None:
        if isinstance(f, ast.Wildcard):
            return
        multi_alts = len(f.alternatives) > 1
        for ai, alt in enumerate(f.alternatives):
            for i, t in enumerate(alt):
                if t.kind in ("variable", "mf_variable"):
                    var = str(t.value.value)  # type: ignore[union-attr]
                    kind = self._lhs_var_kinds.setdefault(var, t.kind)
                    letters = "m" if t.kind == "mf_variable" else slot_type_letters(slot)
                    if letters and not t.negated:
                        known = self.var_types.get(var)
                        both = "".join(ch for ch in known if ch in letters) if known else letters
                        self.var_types[var] = both or letters
                    if kind != t.kind:
                        self.error(
                            t.pos,
                            f"[ANALYSIS3] variable ?{var} is used as both a single and a multifield variable "
                            "on the left-hand side",
                        )
                    if var not in bound:
                        # CLIPS: a leading variable binds the whole field (`?x&red|blue` is ?x & (red|blue)).
                        if ai == 0 and i == 0 and not t.negated:
                            bound.add(var)
                        else:
                            self.error(t.pos, f"variable ?{var} is used before it is bound")
                elif t.kind == "constant" and (is_sym(t.value, "=") or is_sym(t.value, ":")):
                    self.error(t.pos, f"[PRNTUTIL2] '{t.value.value}' in a pattern must be followed by a function call")
                elif t.kind in ("predicate", "return_value"):
                    assert isinstance(t.value, ast.Call)
                    self.call_expected(t.value, ":" if t.kind == "predicate" else "=")
                    self.expr(t.value, bound, r, lhs=True)
                elif slot is not None and not t.negated and len(alt) == 1 and not multi_alts:
                    self.check_value(t.value, slot, tname)  # type: ignore[arg-type]

    def _pattern_cardinality(self, sc: ast.SlotConstraint, card: tuple, tname: str) -> None:
        """[CSTRNCHK1]: the fields of a multislot's constraint cannot match its cardinality."""
        multi = any(
            (isinstance(f, ast.Wildcard) and f.multifield) or (isinstance(f, ast.FieldConstraint) and f.is_multifield)
            for f in sc.fields
        )
        least = sum(
            1
            for f in sc.fields
            if not (
                (isinstance(f, ast.Wildcard) and f.multifield)
                or (isinstance(f, ast.FieldConstraint) and f.is_multifield)
            )
        )
        lo, hi = card
        if not multi and ((hi is not None and least > hi) or (lo is not None and least < lo)):
            self.error(
                sc.pos,
                f"[CSTRNCHK1] the {least} field(s) matched in slot '{sc.name}' of {tname} cannot satisfy its "
                f"cardinality restrictions (cardinality {lo if lo is not None else '?VARIABLE'} "
                f"{hi if hi is not None else '?VARIABLE'})",
            )

    def call_expected(self, e: ast.Expr, where: str) -> None:
        if not isinstance(e, ast.Call) or e.head is None:
            self.error(e.pos, f"expected a function call after {where}, got {show(e)}")

    # -- deffunction
    def function(self, fn: ast.FunctionDef) -> None:
        name = bare(fn.name)
        if name in BUILTIN_ARITY or name in UNSAFE_FUNCTIONS:
            self.warning(
                fn.pos,
                f"[DFFNXPSR2] Deffunctions are not allowed to replace external functions: CLIPS skips "
                f"deffunction {name}, loads the rest, and calls to {name} use the built-in {name}",
            )
            self.skipped.append(fn)
            return
        if self.import_conflict("deffunction", name, fn.pos):
            return
        self.defs.define("deffunction", name, fn)  # visible in its own body: recursion
        params = [*fn.params, *([fn.wildcard] if fn.wildcard else [])]
        if len(set(params)) < len(params):
            self.error(
                repeated_parameter(fn), f"[PRCCODE7] duplicate parameter names are not allowed in deffunction {name}"
            )
        bound = set(fn.params) | ({fn.wildcard} if fn.wildcard else set()) | bind_targets(fn.body)
        for e in fn.body:
            self.expr(e, bound, None)

    # -- opaque constructs: only the safety scan, plus generic function names
    def opaque(self, c: ast.OpaqueConstruct) -> None:
        if c.kind in ("defgeneric", "defmethod") and c.name:
            name = bare(c.name)
            if not self.import_conflict("defgeneric", name, c.pos):
                self.defs.define("defgeneric", name, c)

        def scan(e: ast.Expr) -> None:
            if isinstance(e, ast.Call):
                if e.head is not None:
                    self.safety(e)
                for i in e.items:
                    scan(i)

        for i in c.items:
            scan(i)


def _multifield(f: ast.Field) -> bool:
    """`$?` or a constraint with a multifield variable (`FieldConstraint.is_multifield`, without building lists)."""
    if type(f) is ast.Wildcard:
        return f.multifield
    return any(t.kind == "mf_variable" for alt in f.alternatives for t in alt)  # type: ignore[union-attr]


def misplaced_logical(lhs: list[ast.CE], cap: int = 256) -> ast.CE | None:
    """The first logical CE that follows another CE in some disjunct of the left-hand side.

    CLIPS splits a rule's top-level `or`s into one rule per disjunct, and in each the logical
    CEs must come first: `(or (logical (a)) (logical (b))) (logical (c))` is fine. Left-hand
    sides with more than `cap` disjuncts are not checked.
    """
    if not any(type(ce) in (ast.Logical, ast.And, ast.Or) for ce in lhs):
        return None  # one disjunct, the left-hand side itself, without a logical CE
    seqs = _disjuncts(lhs, cap)
    for seq in seqs or ():
        seen_other = False
        for ce in seq:
            if isinstance(ce, ast.Logical):
                if seen_other:
                    return ce
            else:
                seen_other = True
    return None


def _disjuncts(ces: list[ast.CE], cap: int) -> list[list[ast.CE]] | None:
    seqs: list[list[ast.CE]] = [[]]
    for ce in ces:
        if isinstance(ce, ast.And):
            alts = _disjuncts(ce.ces, cap)
        elif isinstance(ce, ast.Or):
            alts = []
            for c in ce.ces:
                sub = _disjuncts([c], cap)
                if sub is None:
                    return None
                alts.extend(sub)
        else:
            alts = [[ce]]
        if alts is None:
            return None
        seqs = [s + a for s in seqs for a in alts]
        if len(seqs) > cap:
            return None
    return seqs


def validate(
    modules: list[ast.Module], *, allow_unsafe: bool = False, functions: Iterable[str] = ()
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Validate modules in load order. Returns (all diagnostics, the subset about unsafe functions).

    Also fills `RuleDef.reads/asserts/modifies/retracts` in place.
    """
    v = Validator(allow_unsafe=allow_unsafe, functions=functions)
    v.run(modules)
    return v.diagnostics, v.unsafe
