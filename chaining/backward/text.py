"""Goal text: the variables of a goal and premises with their bound variables filled in."""

from __future__ import annotations

from rules import ast
from rules.facts import Fact
from rules.printer import ce_text, expr_text

from .terms import Bindings


def goal_variables(ces: list[ast.CE]) -> list[str]:
    out: list[str] = []

    def expr(e: ast.Expr) -> None:
        if isinstance(e, ast.Atom) and e.kind in ("variable", "mf_variable") and str(e.value) not in out:
            out.append(str(e.value))

    def ce(c: ast.CE) -> None:
        if isinstance(c, ast.Pattern):
            if c.address and c.address not in out:
                out.append(c.address)
            fields = c.fields if c.ordered else [f for s in c.slots for f in s.fields]
            for f in fields:
                if isinstance(f, ast.FieldConstraint):
                    t = f.alternatives[0][0]
                    if t.kind in ("variable", "mf_variable") and not t.negated:
                        expr(t.value)
        elif isinstance(c, (ast.And, ast.Or, ast.Logical)):
            for x in c.ces:
                ce(x)

    for c in ces:
        ce(c)
    return out


def instantiated_expr(e: ast.Expr, b: Bindings) -> str:
    from .terms import show

    if isinstance(e, ast.Atom):
        if e.kind in ("variable", "mf_variable") and str(e.value) in b and not isinstance(b[str(e.value)], Fact):
            return show(b[str(e.value)])
        return expr_text(e)
    return "(" + " ".join(instantiated_expr(i, b) for i in e.items) + ")"


def instantiated_field(f: ast.Field, b: Bindings) -> str:
    from rules.printer import field_text

    if isinstance(f, ast.FieldConstraint) and len(f.alternatives) == 1 and len(f.alternatives[0]) == 1:
        t = f.alternatives[0][0]
        if t.kind in ("variable", "mf_variable", "constant") and not t.negated:
            return instantiated_expr(t.value, b)
    return field_text(f)


def instantiated_text(p: ast.Pattern, b: Bindings) -> str:
    """A pattern with its bound variables replaced by their values, e.g. `(parent tom ?y)`."""
    if p.ordered:
        return "(" + " ".join([p.template, *(instantiated_field(f, b) for f in p.fields)]) + ")"
    return (
        "("
        + " ".join(
            [
                p.template,
                *("(" + " ".join([s.name, *(instantiated_field(f, b) for f in s.fields)]) + ")" for s in p.slots),
            ]
        )
        + ")"
    )


def instantiated_ce(ce: ast.CE, b: Bindings) -> str:
    if isinstance(ce, ast.Pattern):
        return instantiated_text(ce, b)
    if isinstance(ce, ast.Test):
        return f"(test {instantiated_expr(ce.call, b)})"
    if isinstance(ce, ast.Not):
        return f"(not {instantiated_ce(ce.ce, b)})"
    return ce_text(ce)
