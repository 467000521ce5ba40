"""Matching CLIPS patterns against facts, as CLIPS matches them.

A field constraint is terms joined by `&` and `|`; a leading variable binds the whole field
(`?x&red|blue` is ?x constrained by red|blue). Predicates (`:`) and return values (`=`) are
evaluated by CLIPS (`evaluator.ClipsEvaluator`). Multifield variables and `$?` match any
number of fields; single-field variables and `?` match exactly one.
"""

from __future__ import annotations

from collections.abc import Iterator

from rules import ast
from rules.facts import IMPLIED, Fact, String, Symbol

from .errors import EvaluationError
from .evaluator import ClipsEvaluator
from .terms import Bindings, Value, same


def _const(a: ast.Atom) -> Value:
    if a.kind == "string":
        return String(str(a.value))
    if a.kind in ("symbol", "instance_name"):
        return Symbol(str(a.value))
    return a.value


def is_multifield_field(f: ast.Field) -> bool:
    if isinstance(f, ast.Wildcard):
        return f.multifield
    first = f.alternatives[0][0]
    return first.kind == "mf_variable"


def _term_ok(t: ast.Term, value: Value, b: Bindings, ev: ClipsEvaluator, var: str | None) -> bool:
    if t.kind == "constant":
        ok = same(value, _const(t.value))  # type: ignore[arg-type]
    elif t.kind in ("variable", "mf_variable"):
        name = str(t.value.value)  # type: ignore[union-attr]
        if name not in b:
            raise EvaluationError(f"variable ?{name} is used in a constraint before it is bound")
        ok = same(value, b[name])
    elif t.kind == "predicate":
        ok = ev.truth(t.value, b)
    else:  # return_value
        ok = same(value, ev.eval(t.value, b))
    return ok != t.negated


def check_field(f: ast.Field, value: Value, b: Bindings, ev: ClipsEvaluator) -> Bindings | None:
    """Bindings extended by matching one field constraint against `value`, or None."""
    if isinstance(f, ast.Wildcard):
        return b
    alts = f.alternatives
    first = alts[0][0]
    b2 = b
    rest_first = alts[0]
    if first.kind in ("variable", "mf_variable") and not first.negated:
        name = str(first.value.value)  # type: ignore[union-attr]
        if name in b:
            if not same(b[name], value):
                return None
        else:
            b2 = {**b, name: value}
        rest_first = alts[0][1:]
        if not rest_first and len(alts) == 1:
            return b2
    groups = ([rest_first] if rest_first else []) + list(alts[1:])
    for group in groups:
        if all(_term_ok(t, value, b2, ev, None) for t in group):
            return b2
    return None


def match_sequence(fields: list[ast.Field], values: tuple, b: Bindings, ev: ClipsEvaluator) -> Iterator[Bindings]:
    """All ways `fields` match the whole of `values`."""
    if not any(is_multifield_field(f) for f in fields):  # fast path: one field per value
        if len(fields) != len(values):
            return
        for f, v in zip(fields, values):
            b2 = check_field(f, v, b, ev)
            if b2 is None:
                return
            b = b2
        yield b
        return
    n_single = [0] * (len(fields) + 1)
    for i in range(len(fields) - 1, -1, -1):
        n_single[i] = n_single[i + 1] + (0 if is_multifield_field(fields[i]) else 1)

    def go(i: int, pos: int, b: Bindings) -> Iterator[Bindings]:
        if i == len(fields):
            if pos == len(values):
                yield b
            return
        f = fields[i]
        if is_multifield_field(f):
            max_end = len(values) - n_single[i + 1]
            fixed = None
            if isinstance(f, ast.FieldConstraint):
                name = str(f.alternatives[0][0].value.value)  # type: ignore[union-attr]
                if name in b and isinstance(b[name], tuple):
                    fixed = len(b[name])
            for end in range(pos, max_end + 1):
                if fixed is not None and end - pos != fixed:
                    continue
                b2 = check_field(f, tuple(values[pos:end]), b, ev)
                if b2 is not None:
                    yield from go(i + 1, end, b2)
        else:
            if pos >= len(values):
                return
            b2 = check_field(f, values[pos], b, ev)
            if b2 is not None:
                yield from go(i + 1, pos + 1, b2)

    yield from go(0, 0, b)


def match(
    p: ast.Pattern, fact: Fact, b: Bindings, ev: ClipsEvaluator, multislots: set[str] | None = None
) -> Iterator[Bindings]:
    """All bindings under which pattern `p` matches `fact` (given bindings `b`).

    `multislots` names the template's multislots (their values are tuples matched as sequences).
    """
    if fact.template != p.template.rsplit("::", 1)[-1]:
        return
    if p.ordered:
        if not fact.is_ordered and fact.slots:
            if not p.fields:  # `(person)` matches any person fact
                yield b
            return
        yield from match_sequence(p.fields, tuple(fact.slots.get(IMPLIED, ())), b, ev)
        return
    multislots = multislots or set()

    def go(i: int, b: Bindings) -> Iterator[Bindings]:
        if i == len(p.slots):
            yield b
            return
        sc = p.slots[i]
        if sc.name not in fact.slots:
            return
        value = fact.slots[sc.name]
        if sc.name in multislots:
            for b2 in match_sequence(sc.fields, value if isinstance(value, tuple) else (value,), b, ev):
                yield from go(i + 1, b2)
        else:
            if len(sc.fields) != 1:
                return
            b2 = check_field(sc.fields[0], value, b, ev)
            if b2 is not None:
                yield from go(i + 1, b2)

    yield from go(0, b)
