"""Special forms (bind, if, while, loop-for-count, progn$, foreach, switch, assert, modify,
duplicate, retract, ...), fact-set queries, and facts as written in deffacts and assert.

Each check is a generator yielding the sub-expressions to check (see `rules.validate_exprs`).
"""

from __future__ import annotations

from collections.abc import Iterator

from . import ast
from .validate_common import NUMBER, RESERVED_RELATIONS, Reporter, bare, is_sym, show

Steps = Iterator[tuple]


class FormChecks(Reporter):
    """Special forms and facts; expects `self.defs`, `self.arity`, `self.check_value`, `self.known_function`,
    `self.global_visible`."""

    def control(
        self, e: ast.Call, head: str, args: list[ast.Expr], bound: set[str], r: ast.RuleDef | None, addresses: dict
    ) -> Steps:
        pos = e.items[0].pos
        if head == "bind":
            if not args or not (
                isinstance(args[0], ast.Atom) and args[0].kind in ("variable", "mf_variable", "global")
            ):
                self.error(pos, "bind expects a variable and a value: (bind ?x value)")
                return
            for a in args[1:]:
                yield (a, bound, r, addresses)
            if args[0].kind == "global":
                if not self.global_visible(str(args[0].value)):
                    name = str(args[0].value)
                    hint = self.defs.hidden("defglobal", name)
                    self.error(args[0].pos, f"global variable ?*{name}* is not defined by any defglobal{hint}")
            else:
                bound.add(str(args[0].value))
            return
        if head == "assert":
            if not args:
                self.error(pos, "assert expects at least one fact")
            for a in args:
                yield from self.fact_spec(a, bound, r, "assert", addresses)
            return
        if head in ("modify", "duplicate"):
            if not args:
                self.error(pos, f"{head} expects a fact address and slot values")
                return
            target = args[0]
            if isinstance(target, ast.Atom) and target.kind not in ("variable", "integer"):
                self.error(target.pos, f"{head} expects a fact address (?f) or a fact index, got {show(target)}")
                return
            yield (target, bound, r, addresses)
            tname = (
                addresses.get(str(target.value)) if isinstance(target, ast.Atom) and target.kind == "variable" else None
            )
            tmpl = self.defs.templates.get(tname) if tname else None
            if r is not None and tname:
                (r.modifies if head == "modify" else r.asserts).add(tname)
            for a in args[1:]:
                if not isinstance(a, ast.Call) or a.head is None:
                    self.error(a.pos, f"{head} expects (slot value...) after the fact address, got {show(a)}")
                    continue
                slot = tmpl.slots.get(a.head) if tmpl else None
                if tmpl is not None and slot is None:
                    self.error(
                        a.items[0].pos, f"template {tname} has no slot '{a.head}'{self._suggest(a.head, tmpl.slots)}"
                    )
                values = fold_return_values(a.args)
                if slot is not None and not slot.multislot and len(values) != 1:
                    self.error(
                        a.items[0].pos,
                        f"[TMPLTDEF2] single-field slot '{a.head}' of {tname} needs exactly one value, "
                        f"got {len(values)}",
                    )
                for v in values:
                    if type(v) is ast.Atom:  # as `drive` would check it, without a round trip
                        self.atom(v, bound, r)
                        if slot is not None:
                            self.check_value(v, slot, tname or "")
                    else:
                        yield (v, bound, r, addresses)
                if slot is not None:
                    self.check_cardinality(a.items[0].pos, values, slot, tname or "", head)
            return
        if head == "retract":
            if not args:
                self.error(pos, "retract expects at least one fact address or index")
            for a in args:
                if isinstance(a, ast.Atom) and a.kind == "symbol" and a.value == "*":
                    continue

                yield (a, bound, r, addresses)
                if r is not None and isinstance(a, ast.Atom) and a.kind == "variable":
                    t = addresses.get(str(a.value))
                    if t:
                        r.retracts.add(t)
            return
        if head == "if":
            if not args:
                self.error(pos, "if expects a condition: (if COND then ACTION... [else ACTION...])")
                return
            yield (args[0], bound, r, addresses)
            rest = args[1:]
            if not rest or not is_sym(rest[0], "then"):
                self.error(pos, "if expects 'then' after its condition")
            for a in rest[1:]:
                if is_sym(a, "else"):
                    continue
                yield (a, bound, r, addresses)
            return
        if head == "while":
            if not args:
                self.error(pos, "while expects a condition")
                return
            for a in args:
                if not is_sym(a, "do"):
                    yield (a, bound, r, addresses)
            return
        if head == "foreach":
            if len(args) < 2 or not (isinstance(args[0], ast.Atom) and args[0].kind == "variable"):
                self.error(pos, "foreach expects a variable and a multifield: (foreach ?x EXPR ACTION...)")
                return
            yield (args[1], bound, r, addresses)
            var = str(args[0].value)
            inner = bound | {var, var + "-index"}  # the loop's variables end with the loop ([PRCCODE3] after it)
            for a in args[2:]:
                yield (a, inner, r, addresses)
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
                limits = spec.items[1:]
                if len(limits) not in ((1, 2) if head == "loop-for-count" else (1,)):
                    want = "(?var [START] END)" if head == "loop-for-count" else "(?var MULTIFIELD)"
                    self.error(spec.pos, f"[PRNTUTIL2] {head} expects {want}, got {show(spec)}")
                for a in limits:
                    if head == "loop-for-count" and isinstance(a, ast.Atom) and a.kind in ("symbol", "string"):
                        self.error(a.pos, f"[PRNTUTIL2] {head} expects integer limits, got {show(a)}")
                    yield (a, bound, r, addresses)
                var = str(spec.items[0].value)
                inner = bound | ({var} if head == "loop-for-count" else {var, var + "-index"})
            else:
                yield (spec, bound, r, addresses)
            for a in body:
                if not is_sym(a, "do"):
                    yield (a, inner, r, addresses)
            return
        if head == "switch":
            if not args:
                self.error(pos, "switch expects a value")
                return
            yield (args[0], bound, r, addresses)
            cases: list[ast.Expr] = []
            default_seen = False
            for clause in args[1:]:
                if not isinstance(clause, ast.Call) or clause.head not in ("case", "default"):
                    self.error(clause.pos, "switch expects (case VALUE then ACTION...) or (default ACTION...)")
                    continue
                items = clause.args
                if default_seen:
                    self.error(
                        clause.pos,
                        "[PRNTUTIL2] switch: the (default ...) clause must be the last one, and there is only one",
                    )
                if clause.head == "default":
                    default_seen = True
                if clause.head == "case":
                    if len(items) < 2 or is_sym(items[0], "then") or not is_sym(items[1], "then"):
                        self.error(
                            clause.pos, f"[PRNTUTIL2] switch expects (case VALUE then ACTION...), got {show(clause)}"
                        )
                        continue
                    if any(items[0] == c for c in cases):
                        self.error(
                            items[0].pos, f"[PRCDRPSR3] duplicate case {show(items[0])} in switch (CLIPS refuses it)"
                        )
                    cases.append(items[0])
                    yield (items[0], bound, r, addresses)
                    items = items[1:]
                for a in items:
                    if not is_sym(a, "then"):
                        yield (a, bound, r, addresses)
            return
        # progn, return, break
        self.arity(head, len(args), pos)
        for a in args:
            yield (a, bound, r, addresses)

    def query(
        self, e: ast.Call, args: list[ast.Expr], bound: set[str], r: ast.RuleDef | None, addresses: dict, facts: bool
    ) -> Steps:
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
            yield (a, inner, r, addresses)

    def fact_spec(
        self, f: ast.Expr, bound: set[str], r: ast.RuleDef | None, where: str, addresses: dict | None = None
    ) -> Steps:
        """Check `(relation value...)` or `(template (slot value...)...)` as in deffacts and assert."""
        addresses = addresses if addresses is not None else {}
        head = f.head if isinstance(f, ast.Call) else None
        if head is None:
            self.error(
                f.pos,
                f"{where} expects a fact such as (relation value...) or (template (slot value)...), got {show(f)}",
            )
            return
        name = bare(head)
        args = f.items[1:]
        name_pos = f.items[0].pos
        if "::" in head:
            self.error(
                name_pos,
                f"[MODULDEF1] illegal use of the module specifier in {head}: a fact names its "
                f"deftemplate without a module ({name}); the template must be visible in the current module",
            )
        if NUMBER.fullmatch(name) or name in ("=", ":"):
            self.error(name_pos, f"a fact's first field must be a symbol, got {name}")
        for i, a in enumerate(args):
            if (
                type(a) is ast.Atom
                and a.value == "="
                and is_sym(a, "=")
                and not (i + 1 < len(args) and isinstance(args[i + 1], ast.Call))
            ):
                self.error(a.pos, f"'=' in a fact must be followed by a call, as in =(+ ?x 1) ({where})")
        if name in RESERVED_RELATIONS:
            self.error(name_pos, f"'{name}' cannot name a fact")
        tmpl = self.defs.templates.get(name)
        self.defs.used_templates.add(name)
        if r is not None:
            r.asserts.add(name)
        if tmpl is None or not tmpl.slots:
            for a in args:
                if isinstance(a, ast.Call) and a.head is not None and not self.known_function(a.head):
                    self.error(
                        name_pos,
                        f"unknown template '{name}': ({a.head} ...) looks like a slot, but no "
                        f"deftemplate {name} is defined{self._suggest(name, self.defs.templates)}",
                    )
                    return
                yield (a, bound, r, addresses)
            return
        given = set()
        for a in args:
            slot_name = a.head if isinstance(a, ast.Call) else None
            if slot_name is None:
                self.error(a.pos, f"{name} is a deftemplate: give slot values as (slot value), got {show(a)}")
                continue
            slot = tmpl.slots.get(slot_name)
            if slot is None:
                self.error(
                    a.items[0].pos, f"template {name} has no slot '{slot_name}'{self._slot_hint(slot_name, tmpl)}"
                )
                continue
            if slot_name in given:
                self.error(a.items[0].pos, f"slot '{slot_name}' given twice in {where} of {name}")
            given.add(slot_name)
            values = fold_return_values(a.items[1:])
            if not slot.multislot and len(values) != 1:
                self.error(
                    a.items[0].pos, f"single-field slot '{a.head}' of {name} needs exactly one value, got {len(values)}"
                )
            constrained = bool(slot.attributes)  # `check_value` finds nothing to check otherwise
            for v in values:
                if type(v) is ast.Atom:  # as `drive` would check it, without a round trip
                    self.atom(v, bound, r)
                    if constrained:
                        self.check_value(v, slot, name)
                else:
                    yield (v, bound, r, addresses)
            if slot.multislot:  # cardinality is a multislot's
                self.check_cardinality(a.items[0].pos, values, slot, name, where)
        for sname, slot in tmpl.slots.items():
            d = slot.attribute("default") if slot.attributes else None
            if (
                sname not in given
                and d is not None
                and len(d.values) == 1
                and isinstance(d.values[0], ast.Atom)
                and d.values[0].kind == "variable"
                and d.values[0].value == "NONE"
            ):
                self.error(name_pos, f"slot '{sname}' of {name} requires a value (default ?NONE)")


def fold_return_values(values: list[ast.Expr]) -> list[ast.Expr]:
    """Slot values with CLIPS's `=(expr)` read as the one value `(expr)` (in assert, modify,
    duplicate and deffacts, `=` before a call marks the call's value)."""
    for v in values:  # a loop, not any(): this runs once a slot value
        if type(v) is ast.Atom and v.value == "=" and v.kind == "symbol":
            break
    else:
        return values
    out: list[ast.Expr] = []
    for i, v in enumerate(values):
        if is_sym(v, "=") and i + 1 < len(values) and isinstance(values[i + 1], ast.Call):
            continue
        out.append(v)
    return out
