"""Matching CLIPS patterns against facts, as CLIPS matches them.

A field constraint is terms joined by `&` and `|`; a leading variable binds the whole field
(`?x&red|blue` is ?x constrained by red|blue). Predicates (`:`) and return values (`=`) are
evaluated by CLIPS (`evaluator.ClipsEvaluator`). Multifield variables and `$?` match any
number of fields; single-field variables and `?` match exactly one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rules import ast
from rules.facts import IMPLIED, Fact, String, Symbol

from .errors import EvaluationError
from .evaluator import ClipsEvaluator
from .terms import Bindings, Value, same, vkey


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


# ---- compiled matching of simple patterns -------------------------------------------------------

PlanCache = dict  # id(pattern) -> (pattern, plan): the pattern is kept so that its id stays unique


def _simple_field(f: ast.Field):
    """(0, None) wildcard, (1, key) constant, (2, name) variable; None when the field needs `check_field`."""
    if isinstance(f, ast.Wildcard):
        return None if f.multifield else (0, None)
    if len(f.alternatives) != 1 or len(f.alternatives[0]) != 1:
        return None
    t = f.alternatives[0][0]
    if t.negated:
        return None
    if t.kind == "constant":
        return (1, vkey(_const(t.value)))  # type: ignore[arg-type]
    if t.kind == "variable":
        return (2, str(t.value.value))  # type: ignore[union-attr]
    return None


_PLAIN = frozenset((Symbol, String, int, float))  # equal values of one of these types have equal `vkey`s


def compile_pattern(p: ast.Pattern, multislots: set[str] | None, cache: PlanCache):
    """A plan for matching `p` without generators: ("o", n, fields) for an ordered pattern of single
    fields, ("t", [(slot, field)]) for a template pattern of single-field, single-value slots; None
    when `p` needs the general matcher (multifields, `&`, `|`, `~`, predicates)."""
    got = cache.get(id(p))
    if got is not None and got[0] is p:
        return got[1]
    plan: Any = None
    if p.ordered and p.fields:
        fields = [_simple_field(f) for f in p.fields]
        if all(x is not None for x in fields):
            plan = ("o", len(fields), tuple(fields))
    elif not p.ordered:
        pairs = []
        for sc in p.slots:
            if (multislots and sc.name in multislots) or len(sc.fields) != 1:
                break
            x = _simple_field(sc.fields[0])
            if x is None:
                break
            pairs.append((sc.name, x))
        else:
            plan = ("t", tuple(pairs))
    if len(cache) > 50_000:  # goals are parsed anew per proof: keep the cache bounded
        cache.clear()
    cache[id(p)] = (p, plan)
    return plan


def match_list(
    p: ast.Pattern, fact: Fact, b: Bindings, ev: ClipsEvaluator, multislots: set[str] | None, cache: PlanCache
) -> list[Bindings]:
    """`list(match(...))`, through a compiled plan when the pattern is simple (the common case)."""
    plan = compile_pattern(p, multislots, cache)
    if plan is None or fact.template != p.template.rsplit("::", 1)[-1]:
        return list(match(p, fact, b, ev, multislots))
    slots = fact.slots
    if plan[0] == "o":
        vals = slots.get(IMPLIED)
        if vals is None:
            return list(match(p, fact, b, ev, multislots))
        if len(vals) != plan[1]:
            return []
        pairs = zip(plan[2], vals)
    else:
        try:
            pairs = [(x, slots[name]) for name, x in plan[1]]
        except KeyError:
            return []
    out = b
    copied = False
    for (kind, arg), v in pairs:
        if kind == 0:
            continue
        if kind == 1:
            if vkey(v) != arg:
                return []
            continue
        if arg in out:
            a = out[arg]
            if a is v or (type(a) is type(v) and type(v) in _PLAIN and a == v):
                continue  # the same typed value (the common case): no keys needed
            if vkey(a) != vkey(v):
                return []
            continue
        if not copied:
            out = dict(out)
            copied = True
        out[arg] = v
    return [out]


def multislot_value(p: ast.Pattern, b: dict, slot: str) -> tuple | None:
    """The value of multislot `slot` in pattern `p` when every field of it is a constant or bound
    (`(pixels $?p)` with ?p bound), else None."""
    for sc in p.slots:
        if sc.name != slot:
            continue
        out: list = []
        for f in sc.fields:
            if isinstance(f, ast.Wildcard) or len(f.alternatives) != 1 or len(f.alternatives[0]) != 1:
                return None
            t = f.alternatives[0][0]
            if t.negated:
                return None
            if t.kind == "constant":
                out.append(_const(t.value))
            elif t.kind in ("variable", "mf_variable") and str(t.value.value) in b:
                v = b[str(t.value.value)]
                out.extend(v if isinstance(v, tuple) else (v,))
            else:
                return None
        return tuple(out)
    return None


def ordered_binder(p: ast.Pattern, key: tuple, b: Bindings, multislots: set[str] | None, cache: PlanCache):
    """How to match simple ordered pattern `p`, called with variant key `key` (`CallsMixin._call_key`)
    under bindings `b`, without the general matcher: (arity, checks, free) where `checks` are the
    (position, typed key) pairs a value must equal (constants and bound variables) and `free` the
    (name, position) pairs of distinct variables it binds. None when `p` needs `match_list` (not a
    simple ordered plan, a variable bound to a multifield or fact address, a variable repeated
    unbound). A fact from `FactIndex.lookup(key)` already agrees with every check."""
    plan = compile_pattern(p, multislots, cache)
    if plan is None or plan[0] != "o" or key[1] != "o" or key[3] != plan[1]:
        return None
    checks: list = []
    free: list = []
    names: set[str] = set()
    for pos, (kind, arg) in enumerate(plan[2]):
        if kind == 0:
            continue
        if kind == 1:
            checks.append((pos, arg))
            continue
        if arg in b:
            k = key[2][pos]
            if k is None:  # bound to a multifield or a fact address: the general matcher decides
                return None
            checks.append((pos, k))
            continue
        if arg in names:
            return None
        names.add(arg)
        free.append((arg, pos))
    return plan[1], tuple(checks), tuple(free)
