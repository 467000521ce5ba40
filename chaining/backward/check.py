"""Unknown relations: a goal or premise whose relation nothing defines (a misspelt name, usually).

A relation is defined by a deftemplate, a deffacts fact, a rule's `(assert ...)` anywhere in
its right-hand side, an `;@askable` declaration, or facts given at run time. A premise or goal
over any other relation can never match, which Prolog reports as an unknown procedure; here
`kb check` lists such premises as warnings and `kb ask` refuses a goal over a relation that
nothing defines or reads, each located (file:line:col) with the closest defined name ("did you
mean").
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from rules import KnowledgeBase, ast


@dataclass(slots=True, frozen=True)
class UnknownRelation:
    """A pattern over an undefined relation: where it is and the closest defined relation."""

    relation: str
    file: str
    line: int
    column: int
    where: str  # "goal" or "rule NAME, premise N"
    suggestion: str | None = None

    @property
    def message(self) -> str:
        hint = f"; did you mean {self.suggestion}?" if self.suggestion else ""
        return f"{self.where} uses relation {self.relation}, which no rule, fact, template or askable defines{hint}"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"

    def to_dict(self) -> dict:
        return {
            "relation": self.relation,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "where": self.where,
            "suggestion": self.suggestion,
            "message": self.message,
        }


def _bare(name: str) -> str:
    return str(name).rsplit("::", 1)[-1]


def _asserted(e: ast.Expr, out: set[str]) -> None:
    work = [e]
    while work:
        x = work.pop()
        if isinstance(x, ast.Call):
            if x.head in ("assert", "duplicate"):
                out.update(_bare(a.head) for a in x.args if isinstance(a, ast.Call) and a.head)
            work.extend(x.items)


def defined_relations(kb: KnowledgeBase, given: Iterable[str] = ()) -> set[str]:
    """Relations something defines: templates, deffacts, asserted conclusions, askables, `given`."""
    out = {_bare(t) for t in kb.templates} | {_bare(a) for a in kb.askable} | {_bare(g) for g in given}
    for d in kb.facts.values():
        names = getattr(d.facts, "relation_names", None)  # plain data (rules.scan.FactData): no AST needed
        if names is not None:
            out.update(_bare(n) for n in names())
        else:
            out.update(_bare(c.head) for c in d.facts if isinstance(c, ast.Call) and c.head)
    for r in kb.rules.values():
        for action in r.rhs:
            _asserted(action, out)
    out.add("initial-fact")
    return out


def _patterns(ces: list[ast.CE]):
    """(top-level premise index, pattern) for every pattern, nested ones included."""
    for i, top in enumerate(ces):
        work = [top]
        while work:
            ce = work.pop()
            if isinstance(ce, ast.Pattern):
                yield i, ce
            elif isinstance(ce, ast.Not):
                work.append(ce.ce)
            elif isinstance(ce, (ast.And, ast.Or, ast.Exists, ast.Forall, ast.Logical)):
                work.extend(reversed(ce.ces))


def _suggest(rel: str, defined: set[str]) -> str | None:
    close = difflib.get_close_matches(rel, sorted(defined), n=1, cutoff=0.7)
    return close[0] if close else None


def unknown_premises(kb: KnowledgeBase, given: Iterable[str] = ()) -> list[UnknownRelation]:
    """Premises of the knowledge base's rules over relations nothing defines, in file order."""
    defined = defined_relations(kb, given)
    files = {}
    for (name, _), module in zip(kb.sources, kb.modules):
        for c in module.constructs:
            files[id(c)] = str(name)
    out = []
    for r in kb.rules.values():
        for i, p in _patterns(r.lhs):
            rel = _bare(p.template)
            if rel not in defined:
                pos = p.template_pos if p.template_pos.line else p.pos
                out.append(
                    UnknownRelation(
                        rel,
                        files.get(id(r), kb.name),
                        pos.line,
                        pos.column,
                        f"rule {_bare(r.name)}, premise {i + 1}",
                        _suggest(rel, defined),
                    )
                )
    return out


def unknown_in_goal(kb: KnowledgeBase, ces: list[ast.CE], given: Iterable[str] = ()) -> list[UnknownRelation]:
    """Patterns of a parsed goal over relations nothing defines (columns count in the goal text).

    A relation some rule reads counts as declared here (its facts may come at run time, as an
    input relation's do); a misspelt premise is reported by `unknown_premises` instead."""
    defined = defined_relations(kb, given)
    for r in kb.rules.values():
        defined.update(_bare(p.template) for _, p in _patterns(r.lhs))
    prefix = len("(defrule __goal__ ")  # goals are parsed as a rule's left-hand side (goals.parse_goal)
    out = []
    for _, p in _patterns(ces):
        rel = _bare(p.template)
        if rel not in defined:
            pos = p.template_pos if p.template_pos.line else p.pos
            out.append(UnknownRelation(rel, "goal", 1, max(pos.column - prefix, 1), "the goal", _suggest(rel, defined)))
    return out


def _fits(a: tuple[int, bool], b: tuple[int, bool]) -> bool:
    """Two field-count shapes (fixed fields, may have more) that some fact satisfies both."""
    (n, va), (m, vb) = a, b
    return (va and vb) or (va and m >= n) or (vb and n >= m) or n == m


def _spliced(f: ast.Expr) -> bool:
    """A field of an asserted fact that may stand for any number of fields (a multifield variable,
    a global, a function call)."""
    return isinstance(f, ast.Call) or (isinstance(f, ast.Atom) and f.kind in ("mf_variable", "global"))


def _conclusion_shapes(kb: KnowledgeBase) -> dict[str, set[tuple[int, bool]]]:
    """Field-count shapes of ordered facts the rules assert, by relation (a multifield or a function
    call among the fields may splice in any number of fields)."""
    out: dict[str, set[tuple[int, bool]]] = {}
    work: list[ast.Expr] = [a for r in kb.rules.values() for a in r.rhs]
    while work:
        x = work.pop()
        if not isinstance(x, ast.Call):
            continue
        if x.head in ("assert", "duplicate"):
            for fact in x.args:
                if not isinstance(fact, ast.Call) or not fact.head:
                    continue
                if fact.head in kb.templates:
                    continue
                spliced = [_spliced(f) for f in fact.args]
                fixed = spliced.count(False)
                out.setdefault(_bare(fact.head), set()).add((fixed, any(spliced)))
        work.extend(x.items)
    return out


def wrong_arity_in_goal(
    kb: KnowledgeBase, ces: list[ast.CE], given_shapes: dict[str, set[int]]
) -> list[tuple[int, str]]:
    """Goal patterns over an ordered relation whose field count no definition of it has (Prolog's
    unknown procedure for `parent/3` when only `parent/2` exists). Returns `(column in the goal
    text, message)` for each; relations with a deftemplate or an askable declaration, and relations
    nothing defines, are left alone (the validator and `unknown_in_goal` speak for those).

    `given_shapes`: relation -> the field counts of its given and deffacts facts."""
    concl = _conclusion_shapes(kb)
    prefix = len("(defrule __goal__ ")
    out = []
    for _, p in _patterns(ces):
        rel = _bare(p.template)
        if not p.ordered or rel in kb.templates or rel in kb.askable:
            continue
        defs = {(n, False) for n in given_shapes.get(rel, ())} | concl.get(rel, set())
        if not defs:
            continue
        multi = [
            (isinstance(f, ast.Wildcard) and f.multifield) or (isinstance(f, ast.FieldConstraint) and f.is_multifield)
            for f in p.fields
        ]
        open_ended, fixed = any(multi), multi.count(False)
        goal_shape = (fixed, open_ended)
        if any(_fits(goal_shape, d) for d in defs):
            continue
        have = sorted({f"{n}+" if v else str(n) for n, v in defs}, key=lambda s: (int(s.rstrip("+")), s))
        says = f"{fixed} or more" if open_ended else str(fixed)
        pos = p.template_pos if p.template_pos.line else p.pos
        out.append(
            (
                max(pos.column - prefix, 1),
                f"the goal's ({rel} ...) has {says} field(s) after the relation name, but every {rel} fact "
                f"(given, deffacts or concluded by a rule) has {' or '.join(have)}: it can never match",
            )
        )
    return out
