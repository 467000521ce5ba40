"""Validation of plain-data `deffacts` (`rules.scan.FactData`) without building their facts.

Three levels, cheapest first: `data_facts` (flat ordered facts: relation names only),
`template_shapes` (template facts shape by shape), `template_data` (template facts token by
token, with the type / allowed-value / range checks of constrained slots). Each returns False,
reporting nothing, when the data needs the next level; the last level is the full check of the
built facts (`Validator.construct`), which reports every problem at its place.
"""

from __future__ import annotations

from . import ast
from .scan import FactData, atom
from .validate_common import RESERVED_RELATIONS, bare


class DataChecks:
    """Mixin of `rules.validate.Validator`: its `defs`, `diagnostics`, `error` and `check_value`."""

    def template_shapes(self, facts: FactData) -> bool:
        """Check plain data with template facts shape by shape (`FactData.shapes()`), reporting nothing.

        Returns True when every shape is valid and no fact has a slot with type, allowed-value or
        range constraints; False when any fact needs a closer look (`template_data`, then the full
        check), which then reports the problem at its place.
        """
        shapes = facts.shapes()
        if shapes is None:
            return False
        used = set()
        for name, slots, fields in shapes:
            key = bare(name)
            if key in RESERVED_RELATIONS or key != name:
                return False
            tmpl = self.defs.templates.get(key)
            used.add(key)
            if tmpl is None or not tmpl.slots:
                if slots:
                    return False
                continue
            if fields:
                return False
            given: set[str] = set()
            for slot, count in slots:
                s = tmpl.slots.get(slot)
                if s is None or slot in given or (not s.multislot and count != 1):
                    return False
                if s.types or s.allowed is not None or s.range is not None or s.cardinality is not None:
                    return False
                given.add(slot)
            for n, s in tmpl.slots.items():
                if n not in given and (d := s.attribute("default")) is not None and len(d.values) == 1:
                    v = d.values[0]
                    if isinstance(v, ast.Atom) and v.kind == "variable" and v.value == "NONE":
                        return False
        self.defs.used_templates |= used
        return True

    def template_data(self, facts: FactData) -> bool:
        """Check plain data with template facts by reading tokens, without building the AST.

        Type, allowed-value and range checks run on the values of constrained slots only.
        Returns False (nothing reported) when a fact needs the full check: an unknown template
        or slot, a slot given twice, a wrong number of values, a required slot left out, an
        ordered fact of a template with slots.
        """
        lines, mark = facts.lines, len(self.diagnostics)
        plans: dict[str, tuple] = {}
        for name, _, slots in facts.template_facts():
            key = bare(name)
            plan = plans.get(key)
            if plan is None:
                tmpl = self.defs.templates.get(key)
                if key in RESERVED_RELATIONS or tmpl is None or not tmpl.slots:
                    plan = (None, None, None)
                else:
                    constrained = {
                        n: s
                        for n, s in tmpl.slots.items()
                        if s.types or s.allowed is not None or s.range is not None or s.cardinality is not None
                    }
                    required = {
                        n
                        for n, s in tmpl.slots.items()
                        if (d := s.attribute("default")) is not None
                        and len(d.values) == 1
                        and isinstance(d.values[0], ast.Atom)
                        and d.values[0].kind == "variable"
                        and d.values[0].value == "NONE"
                    }
                    plan = (tmpl, constrained, required)
                plans[key] = plan
                self.defs.used_templates.add(key)
            tmpl, constrained, required = plan
            if key != name:  # a module specifier: the full check reports it
                del self.diagnostics[mark:]
                return False
            if tmpl is None:
                if slots and slots[-1][0] != "" or key in RESERVED_RELATIONS:
                    del self.diagnostics[mark:]
                    return False
                continue
            given: set[str] = set()
            for slot, offset, v0, v1 in slots:
                s = tmpl.slots.get(slot)
                if s is None or slot in given or (not s.multislot and not facts.single(v0, v1)):
                    del self.diagnostics[mark:]
                    return False
                given.add(slot)
                if slot in constrained:
                    atoms = [atom(t, lines.pos(o, o + len(t))) for t, o in facts.values(v0, v1)]
                    for a in atoms:
                        self.check_value(a, s, tmpl.name)
                    if s.multislot and s.cardinality is not None:
                        self.check_cardinality(lines.pos(offset, offset + len(slot)), atoms, s, tmpl.name, "deffacts")
            if required and not required <= given:
                del self.diagnostics[mark:]
                return False
        return True

    def data_facts(self, facts: FactData) -> bool:
        """Check flat plain data (ordered facts of constants) by relation name, without building it.

        Returns False when the data needs the full check (a relation is a deftemplate with slots).
        """
        seen: set[str] = set()
        mark = len(self.diagnostics)
        for name, offset in facts.relations():
            if name in seen:
                continue
            seen.add(name)
            if "::" in name:
                del self.diagnostics[mark:]
                return False  # a module specifier: the full check reports it
            tmpl = self.defs.templates.get(bare(name))
            if tmpl is not None and tmpl.slots:
                del self.diagnostics[mark:]
                return False
            self.defs.used_templates.add(bare(name))
            if bare(name) in RESERVED_RELATIONS:
                self.error(facts.lines.pos(offset, offset + len(name)), f"'{bare(name)}' cannot name a fact")
        return True
