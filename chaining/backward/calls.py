"""Calls and conclusions: the variant key of a call, head unification, instantiating a rule's conclusion."""

from __future__ import annotations

from rules import KnowledgeBase, ast
from rules.facts import IMPLIED, Fact

from .errors import EvaluationError
from .evaluator import ClipsEvaluator
from .matcher import _const, is_multifield_field
from .rulebase import BackwardRule, Head
from .terms import Bindings, Value, make_fact, same, vkey


def _plain_variables(h: Head) -> tuple[str, ...]:
    """The variable names of an ordered head whose fields are all `?var`, else ()."""
    if not h.ordered or not h.fields:
        return ()
    names = []
    for e in h.fields:
        if not (isinstance(e, ast.Atom) and e.kind == "variable"):
            return ()
        names.append(str(e.value))
    return tuple(names)


class CallsMixin:
    """Helpers of `Session` that need its knowledge base, evaluator and rule tables."""

    kb: KnowledgeBase
    ev: ClipsEvaluator
    _multislots: dict[str, set[str]]
    _rhs_bound: dict[str, set[str]]
    _defaults: dict[tuple[str, str], Value]
    plans: dict  # id(pattern or head) -> (it, its compiled plan)

    def _call_key(self, p: ast.Pattern, b: Bindings) -> tuple:
        """Variant key of a call: (relation, kind, bound positions/slots)."""
        rel = p.template.rsplit("::", 1)[-1]
        if p.ordered and not p.fields and self._multislots.get(rel) is not None and self.kb.templates[rel].slots:
            return (rel, "t", ())  # `(person)` matches every person fact
        if p.ordered:
            bound: list = []
            exact = True
            for f in p.fields:
                if is_multifield_field(f):
                    exact = False
                    break
                bound.append(self._bound_value(f, b))
            return (rel, "o", tuple(bound), len(p.fields) if exact else None)
        multis = self._multislots.get(rel, set())
        slots = []
        for sc in p.slots:
            if sc.name in multis or len(sc.fields) != 1:
                continue
            v = self._bound_value(sc.fields[0], b)
            if v is not None:
                slots.append((sc.name, v))
        return (rel, "t", tuple(sorted(slots)))

    @staticmethod
    def _bound_value(f: ast.Field, b: Bindings):
        if isinstance(f, ast.Wildcard) or len(f.alternatives) != 1:  # `a|b` binds no single value
            return None
        first = f.alternatives[0][0]
        if first.negated:
            return None
        if first.kind == "constant":
            return vkey(_const(first.value))  # type: ignore[arg-type]
        if first.kind == "variable":
            name = str(first.value.value)  # type: ignore[union-attr]
            if name in b and not isinstance(b[name], (tuple, Fact)):
                return vkey(b[name])
        return None

    @staticmethod
    def _key_matches(key: tuple, f: Fact) -> bool:
        rel, kind = key[0], key[1]
        if f.template != rel:
            return False
        if kind == "o":
            if not f.is_ordered and f.slots:
                return False
            vals = f.slots.get(IMPLIED, ())
            if key[3] is not None and len(vals) != key[3]:
                return False
            if len(vals) < len(key[2]):
                return False
            return all(k is None or vkey(v) == k for k, v in zip(key[2], vals))
        return all(s in f.slots and vkey(f.slots[s]) == k for s, k in key[2])

    def _is_ground(self, key: tuple) -> bool:
        if key[1] == "o":
            return key[3] is not None and all(k is not None for k in key[2])
        t = self.kb.templates.get(key[0])
        if t is None or self._multislots.get(key[0]):
            return False
        return {s for s, _ in key[2]} == set(t.slots)

    def _unify_heads(self, br: BackwardRule, heads: list[Head], key: tuple) -> Bindings | None:
        """Bindings that make some head fit the call (None: no head can); pre-binds head variables."""
        rhs_bound = self._rhs_bound.get(br.name, set())
        best: Bindings | None = None
        for h in heads:
            b: Bindings | None = {}
            if key[1] == "o":
                if not h.ordered:
                    continue
                has_multi = any(
                    isinstance(e, ast.Atom) and e.kind == "mf_variable" or isinstance(e, ast.Call) for e in h.fields
                )
                if key[3] is not None and not has_multi and len(h.fields) != key[3]:
                    continue
                if has_multi:
                    pairs: list = []
                    for e, k in zip(h.fields, key[2]):
                        if isinstance(e, ast.Atom) and e.kind == "mf_variable" or isinstance(e, ast.Call):
                            break
                        pairs.append((e, k))
                else:
                    pairs = list(zip(h.fields, key[2]))
            else:
                if h.ordered:
                    continue
                pairs = [(h.slots[s][0], k) for s, k in key[2] if s in h.slots and len(h.slots[s]) == 1]
            for e, k in pairs:
                if k is None or b is None:
                    continue
                if isinstance(e, ast.Atom) and e.kind in ("symbol", "string", "integer", "float"):
                    from .matcher import _const

                    if vkey(_const(e)) != k:
                        b = None
                elif isinstance(e, ast.Atom) and e.kind == "variable" and str(e.value) not in rhs_bound:
                    name = str(e.value)
                    v = from_vkey(k)
                    if name in b and not same(b[name], v):
                        b = None
                    else:
                        b[name] = v
            if b is not None:
                if len(heads) == 1:
                    return b
                best = {} if best is None else best  # several heads: bind nothing, filter afterwards
        return best

    def _run_actions(self, br: BackwardRule, b: Bindings) -> Bindings:
        b = dict(b)
        for a in br.actions:
            if a.head == "bind":
                target = a.args[0]
                if isinstance(target, ast.Atom) and target.kind == "global":
                    continue
                values = [self.ev.eval(x, b) for x in a.args[1:]]
                name = str(target.value)  # type: ignore[union-attr]
                if len(values) == 1:
                    b[name] = values[0]
                else:
                    b[name] = tuple(v for x in values for v in (x if isinstance(x, tuple) else (x,)))
        return b

    def _value(self, e: ast.Expr, b: Bindings) -> Value:
        if isinstance(e, ast.Atom) and e.kind in ("variable", "mf_variable"):
            name = str(e.value)
            if name not in b:
                raise EvaluationError(f"variable ?{name} is not bound")
            v = b[name]
            if isinstance(v, Fact):
                raise EvaluationError(f"fact address ?{name} cannot be a field value here")
            return v
        return self.ev.eval(e, b)

    def _head_variables(self, h: Head) -> tuple[str, ...]:
        """The variables of an ordered head whose fields are all `?var` (cached), else ()."""
        got = self.plans.get(id(h))  # (head, names): the head is kept so that its id stays unique
        if got is None or got[0] is not h:
            got = self.plans[id(h)] = (h, _plain_variables(h))
        return got[1]

    def _instantiate_head(self, h: Head, b: Bindings) -> Fact:
        names = self._head_variables(h)
        if names:  # every field a single-field variable (the common case): no evaluation needed
            try:
                vals = tuple(b[n] for n in names)
            except KeyError:
                vals = None
            if vals is not None and not any(isinstance(v, (tuple, Fact)) for v in vals):
                return make_fact(h.relation, {IMPLIED: vals})
        if h.ordered:
            vals: list = []
            for e in h.fields:
                v = self._value(e, b)
                vals.extend(v if isinstance(v, tuple) else (v,))
            return make_fact(h.relation, {IMPLIED: tuple(vals)})
        t = self.kb.templates[h.relation]
        slots: dict[str, Value] = {}
        for name, exprs in h.slots.items():
            vals = []
            for e in exprs:
                v = self._value(e, b)
                vals.extend(v if isinstance(v, tuple) else (v,))
            if t.slots[name].multislot:
                slots[name] = tuple(vals)
            else:
                if len(vals) != 1:
                    raise EvaluationError(f"slot {name} of {h.relation} got {len(vals)} values")
                slots[name] = vals[0]
        for name, sd in t.slots.items():
            if name not in slots:
                if sd.default_dynamic:
                    slots[name] = self.ev.eval_text(f"(deftemplate-slot-default-value {h.relation} {name})")
                else:
                    k = (h.relation, name)
                    if k not in self._defaults:
                        self._defaults[k] = self.ev.eval_text(f"(deftemplate-slot-default-value {h.relation} {name})")
                    slots[name] = self._defaults[k]
        return make_fact(h.relation, {n: slots[n] for n in t.slots})

    def _instantiate_call(self, call: ast.Call, b: Bindings) -> Fact:
        rel = str(call.head).rsplit("::", 1)[-1]
        t = self.kb.templates.get(rel)
        if t is not None and t.slots:
            h = Head(rel, False, slots={s.head: list(s.args) for s in call.args if isinstance(s, ast.Call) and s.head})
        else:
            h = Head(rel, True, fields=list(call.args))
        return self._instantiate_head(h, b)


def from_vkey(k: tuple) -> Value:
    """The value a `vkey` was made from."""
    from rules.facts import String, Symbol

    kind, v = k
    if kind == "y":
        return Symbol(v)
    if kind == "s":
        return String(v)
    if kind == "m":
        return tuple(from_vkey(x) for x in v)
    return v
