"""AST -> CLIPS text. `parse(to_clips(module))` equals `module` (positions aside)."""

from __future__ import annotations

from . import ast
from .facts import quote_string as quote


def expr_text(e: ast.Expr) -> str:
    """CLIPS text of an expression (iterative: any nesting depth)."""
    if not isinstance(e, ast.Call):
        return _atom_text(e)
    out: list[str] = []
    stack: list = [e]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, ast.Call):
            stack.append(")")
            for i, child in enumerate(reversed(item.items)):
                stack.append(child)
                if i < len(item.items) - 1:
                    stack.append(" ")
            stack.append("(")
        else:
            out.append(_atom_text(item))
    return "".join(out)


def _atom_text(e: ast.Atom) -> str:
    k, v = e.kind, e.value
    if k == "string":
        return quote(str(v))
    if k == "float":
        return repr(float(v))
    if k == "instance_name":
        return f"[{v}]"
    if k == "variable":
        return f"?{v}"
    if k == "mf_variable":
        return f"$?{v}"
    if k == "global":
        return f"?*{v}*"
    if k == "wildcard":
        return "?"
    if k == "mf_wildcard":
        return "$?"
    return str(v)


def _term(t: ast.Term) -> str:
    prefix = "~" if t.negated else ""
    if t.kind == "predicate":
        return prefix + ":" + expr_text(t.value)
    if t.kind == "return_value":
        return prefix + "=" + expr_text(t.value)
    return prefix + expr_text(t.value)


def field_text(f: ast.Field) -> str:
    if isinstance(f, ast.Wildcard):
        return "$?" if f.multifield else "?"
    return "|".join("&".join(_term(t) for t in alt) for alt in f.alternatives)


def ce_text(ce: ast.CE) -> str:
    """CLIPS text of a conditional element."""
    if isinstance(ce, ast.Pattern):
        if ce.ordered:
            body = " ".join([ce.template, *(field_text(f) for f in ce.fields)])
        else:
            body = " ".join(
                [ce.template, *("(" + " ".join([s.name, *(field_text(f) for f in s.fields)]) + ")" for s in ce.slots)]
            )
        return (f"?{ce.address} <- " if ce.address else "") + f"({body})"
    if isinstance(ce, ast.Test):
        return f"(test {expr_text(ce.call)})"
    if isinstance(ce, ast.Not):
        return f"(not {ce_text(ce.ce)})"
    word = {ast.And: "and", ast.Or: "or", ast.Exists: "exists", ast.Forall: "forall", ast.Logical: "logical"}[type(ce)]
    return f"({word} " + " ".join(ce_text(c) for c in ce.ces) + ")"  # type: ignore[union-attr]


def _comment(c: str | None) -> str:
    return f" {quote(c)}" if c is not None else ""


def construct_text(c: ast.Construct) -> str:
    """CLIPS text of one construct (pretty-printed, one clause per line)."""
    if isinstance(c, ast.TemplateDef):
        lines = [f"(deftemplate {c.name}{_comment(c.comment)}"]
        for s in c.slots.values():
            attrs = "".join(" (" + " ".join([a.name, *(expr_text(v) for v in a.values)]) + ")" for a in s.attributes)
            lines.append(f"   ({s.keyword or ('multislot' if s.multislot else 'slot')} {s.name}{attrs})")
        return "\n".join(lines) + ")"
    if isinstance(c, ast.FactsDef):
        return "\n".join([f"(deffacts {c.name}{_comment(c.comment)}", *("   " + expr_text(f) for f in c.facts)]) + ")"
    if isinstance(c, ast.RuleDef):
        lines = [f"(defrule {c.name}{_comment(c.comment)}"]
        if c.declarations:
            lines.append("   (declare " + " ".join(expr_text(d) for d in c.declarations) + ")")
        lines += ["   " + ce_text(ce) for ce in c.lhs]
        lines.append("   =>")
        lines += ["   " + expr_text(a) for a in c.rhs]
        return "\n".join(lines) + ")"
    if isinstance(c, ast.FunctionDef):
        params = " ".join([*(f"?{p}" for p in c.params), *([f"$?{c.wildcard}"] if c.wildcard else [])])
        return (
            "\n".join(
                [f"(deffunction {c.name}{_comment(c.comment)} ({params})", *("   " + expr_text(b) for b in c.body)]
            )
            + ")"
        )
    if isinstance(c, ast.GlobalDef):
        head = "(defglobal" + (f" {c.module}" if c.module else "")
        return "\n".join([head, *(f"   ?*{a.name}* = {expr_text(a.value)}" for a in c.assignments)]) + ")"
    if isinstance(c, ast.ModuleDef):
        return "\n".join([f"(defmodule {c.name}{_comment(c.comment)}", *("   " + expr_text(s) for s in c.specs)]) + ")"
    assert isinstance(c, ast.OpaqueConstruct)
    return "(" + " ".join([c.kind, *(expr_text(i) for i in c.items)]) + ")"


def to_clips(node: ast.Module | ast.Construct | ast.CE | ast.Expr) -> str:
    """CLIPS source for a module, construct, conditional element or expression."""
    if isinstance(node, ast.Module):
        return "\n\n".join(construct_text(c) for c in node.constructs) + "\n"
    if isinstance(
        node,
        (
            ast.TemplateDef,
            ast.FactsDef,
            ast.RuleDef,
            ast.FunctionDef,
            ast.GlobalDef,
            ast.ModuleDef,
            ast.OpaqueConstruct,
        ),
    ):
        return construct_text(node)
    if isinstance(node, (ast.Atom, ast.Call)):
        return expr_text(node)
    return ce_text(node)
