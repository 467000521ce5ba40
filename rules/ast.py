"""AST of the CLIPS construct language, with source positions.

Every node carries `pos` (1-based line and column of its first and last character). Positions
and source text are excluded from equality, so `parse(to_clips(m)) == m` states a round trip.

Expressions are `Atom` (a constant, variable or wildcard) and `Call` (a parenthesised list:
a function call, or a special form's clause such as the `(?i 1 10)` of `loop-for-count`).
Conditional elements (left-hand side) are `Pattern`, `Test`, `Not`, `And`, `Or`, `Exists`,
`Forall` and `Logical`. Constructs are `TemplateDef`, `FactsDef`, `RuleDef`, `FunctionDef`,
`GlobalDef`, `ModuleDef` and `OpaqueConstruct` (legal CLIPS we pass through unmodelled).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True, frozen=True)
class Pos:
    """Source span: 1-based `line`/`column` of the first character, `end_line`/`end_column` after the last."""

    line: int
    column: int
    end_line: int = 0
    end_column: int = 0
    start_offset: int = 0
    end_offset: int = 0


NOPOS = Pos(0, 0)


def _pos() -> Pos:
    return field(default=NOPOS, compare=False, repr=False)


# ---- expressions -------------------------------------------------------------------------

ATOM_KINDS = (
    "symbol",
    "string",
    "integer",
    "float",
    "instance_name",
    "variable",
    "mf_variable",
    "global",
    "wildcard",
    "mf_wildcard",
)


@dataclass(slots=True)
class Atom:
    """A constant, variable or wildcard.

    `kind` is one of `ATOM_KINDS`; `value` is the Python value: `str` for symbols, strings and
    instance names (without brackets), `int`/`float` for numbers, and the bare name for
    variables (`?x` -> "x", `$?rest` -> "rest", `?*count*` -> "count"; wildcards: "").
    """

    kind: str
    value: str | int | float
    pos: Pos = _pos()

    @property
    def is_variable(self) -> bool:
        return self.kind in ("variable", "mf_variable")


@dataclass(slots=True)
class Call:
    """A parenthesised list `(head arg...)`: a function call or a special form's clause."""

    items: list[Expr]
    pos: Pos = _pos()

    @property
    def head(self) -> str | None:
        """The function name when the first item is a symbol, else None."""
        items = self.items
        if items:
            first = items[0]
            if type(first) is Atom and first.kind == "symbol":
                return str(first.value)
        return None

    @property
    def args(self) -> list[Expr]:
        items = self.items
        if items:
            first = items[0]
            if type(first) is Atom and first.kind == "symbol":
                return items[1:]
        return list(items)


Expr = Atom | Call


# ---- left-hand side ----------------------------------------------------------------------


@dataclass(slots=True)
class Term:
    """One term of a field constraint.

    kind: "constant" (value: Atom), "variable" / "mf_variable" (value: Atom),
    "predicate" (`:(...)`, value: Call), "return_value" (`=(...)`, value: Call).
    negated: preceded by `~`.
    """

    kind: str
    value: Expr
    negated: bool = False
    pos: Pos = _pos()


@dataclass(slots=True)
class FieldConstraint:
    """Terms joined by `&` (inner tuples) and `|` (outer list): `?x&~red|blue`."""

    alternatives: list[list[Term]]
    pos: Pos = _pos()

    @property
    def terms(self) -> list[Term]:
        return [t for alt in self.alternatives for t in alt]

    @property
    def is_multifield(self) -> bool:
        return any(t.kind == "mf_variable" for t in self.terms)


@dataclass(slots=True)
class Wildcard:
    """`?` (one field) or `$?` (zero or more fields)."""

    multifield: bool = False
    pos: Pos = _pos()


Field = FieldConstraint | Wildcard


@dataclass(slots=True)
class SlotConstraint:
    """`(name field...)` inside a template pattern."""

    name: str
    fields: list[Field]
    pos: Pos = _pos()


@dataclass(slots=True)
class Pattern:
    """A fact pattern. Template pattern: `slots` filled, `ordered` False. Ordered: `fields`.

    `address` is the fact-address variable name of `?f <- (...)`, else None.
    """

    template: str
    slots: list[SlotConstraint] = field(default_factory=list)
    fields: list[Field] = field(default_factory=list)
    ordered: bool = True
    address: str | None = None
    pos: Pos = _pos()
    template_pos: Pos = _pos()
    address_pos: Pos = _pos()


@dataclass(slots=True)
class Test:
    call: Call
    pos: Pos = _pos()


@dataclass(slots=True)
class Not:
    ce: CE
    pos: Pos = _pos()


@dataclass(slots=True)
class And:
    ces: list[CE]
    pos: Pos = _pos()


@dataclass(slots=True)
class Or:
    ces: list[CE]
    pos: Pos = _pos()


@dataclass(slots=True)
class Exists:
    ces: list[CE]
    pos: Pos = _pos()


@dataclass(slots=True)
class Forall:
    ces: list[CE]
    pos: Pos = _pos()


@dataclass(slots=True)
class Logical:
    ces: list[CE]
    pos: Pos = _pos()


CE = Pattern | Test | Not | And | Or | Exists | Forall | Logical


# ---- constructs --------------------------------------------------------------------------


@dataclass(slots=True)
class SlotAttribute:
    """One slot attribute as written, e.g. `(type INTEGER)` -> name "type", values [Atom]."""

    name: str
    values: list[Expr]
    pos: Pos = _pos()


@dataclass(slots=True)
class SlotDef:
    """A deftemplate slot. `multislot` for `(multislot ...)`; attributes in source order.

    Derived views: `default` (the default expressions, None when absent), `default_dynamic`,
    `types` (declared type names, empty = any), `allowed` (allowed constants or None),
    `range` ((low, high), None for ?VARIABLE) and `cardinality` (multislots).
    """

    name: str
    multislot: bool
    attributes: list[SlotAttribute] = field(default_factory=list)
    keyword: str = field(default="", compare=False, repr=False)
    pos: Pos = _pos()

    def attribute(self, name: str) -> SlotAttribute | None:
        return next((a for a in self.attributes if a.name == name), None)

    @property
    def default(self) -> list[Expr] | None:
        a = self.attribute("default") or self.attribute("default-dynamic")
        return None if a is None else a.values

    @property
    def default_dynamic(self) -> bool:
        return self.attribute("default-dynamic") is not None

    @property
    def types(self) -> list[str]:
        a = self.attribute("type")
        return [] if a is None else [str(v.value) for v in a.values if isinstance(v, Atom)]

    @property
    def allowed(self) -> list[str | int | float] | None:
        for a in self.attributes:
            if a.name.startswith("allowed-") and a.name not in ("allowed-classes",):
                return [v.value for v in a.values if isinstance(v, Atom) and v.kind != "variable"]
        return None

    @property
    def range(self) -> tuple[float | None, float | None] | None:
        a = self.attribute("range")
        if a is None or len(a.values) != 2:
            return None
        return tuple(v.value if isinstance(v, Atom) and v.kind in ("integer", "float") else None for v in a.values)  # type: ignore[return-value]

    @property
    def cardinality(self) -> tuple[int | None, int | None] | None:
        a = self.attribute("cardinality")
        if a is None or len(a.values) != 2:
            return None
        return tuple(v.value if isinstance(v, Atom) and v.kind == "integer" else None for v in a.values)  # type: ignore[return-value]


@dataclass(slots=True)
class TemplateDef:
    name: str
    slots: dict[str, SlotDef]
    comment: str | None = None
    pos: Pos = _pos()
    text: str = field(default="", compare=False, repr=False)
    annotations: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(slots=True)
class FactsDef:
    name: str
    facts: list[Call]
    comment: str | None = None
    pos: Pos = _pos()
    text: str = field(default="", compare=False, repr=False)
    annotations: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(slots=True)
class RuleDef:
    """A defrule. `salience` is an int, or an expression when computed; `declarations` as written.

    `reads`: templates matched on the LHS (positive or negated); `asserts`, `modifies`,
    `retracts`: templates the RHS asserts, modifies (modify, duplicate) or retracts; `writes`
    is their union. Filled by validation (`rules.validate`).
    """

    name: str
    lhs: list[CE]
    rhs: list[Expr]
    comment: str | None = None
    salience: int | Expr = 0
    auto_focus: bool = False
    declarations: list[Call] = field(default_factory=list)
    pos: Pos = _pos()
    text: str = field(default="", compare=False, repr=False)
    annotations: dict[str, str] = field(default_factory=dict, compare=False)
    reads: set[str] = field(default_factory=set, compare=False)
    asserts: set[str] = field(default_factory=set, compare=False)
    modifies: set[str] = field(default_factory=set, compare=False)
    retracts: set[str] = field(default_factory=set, compare=False)
    module: str = field(default="MAIN", compare=False)  # the defmodule it belongs to (set by validation)

    @property
    def writes(self) -> set[str]:
        return self.asserts | self.modifies | self.retracts


@dataclass(slots=True)
class FunctionDef:
    """A deffunction: `params` are single-field parameter names, `wildcard` the `$?` parameter."""

    name: str
    params: list[str]
    wildcard: str | None
    body: list[Expr]
    comment: str | None = None
    pos: Pos = _pos()
    text: str = field(default="", compare=False, repr=False)
    annotations: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(slots=True)
class GlobalAssignment:
    name: str
    value: Expr
    pos: Pos = _pos()


@dataclass(slots=True)
class GlobalDef:
    assignments: list[GlobalAssignment]
    module: str | None = None
    pos: Pos = _pos()
    text: str = field(default="", compare=False, repr=False)
    annotations: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(slots=True)
class ModuleDef:
    name: str
    specs: list[Call]
    comment: str | None = None
    pos: Pos = _pos()
    text: str = field(default="", compare=False, repr=False)
    annotations: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(slots=True)
class OpaqueConstruct:
    """A legal construct the AST does not model (defclass, defgeneric, ...): kept as items and text."""

    kind: str
    items: list[Expr]
    pos: Pos = _pos()
    text: str = field(default="", compare=False, repr=False)
    annotations: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str | None:
        first = self.items[0] if self.items else None
        return str(first.value) if isinstance(first, Atom) and first.kind == "symbol" else None


Construct = TemplateDef | FactsDef | RuleDef | FunctionDef | GlobalDef | ModuleDef | OpaqueConstruct


@dataclass(slots=True)
class Comment:
    text: str
    pos: Pos = _pos()


@dataclass(slots=True)
class Module:
    """One parsed source file: its constructs in order and its comments (for `;@` annotations)."""

    filename: str
    constructs: list[Construct]
    comments: list[Comment] = field(default_factory=list, compare=False)
    text: str = field(default="", compare=False, repr=False)
    diagnostics: list = field(default_factory=list, compare=False, repr=False)  # warnings found while parsing
