"""Deftemplate checks: slot attributes and constraints, and constants against a slot's type,
allowed values and range (what CLIPS checks statically when a construct is loaded)."""

from __future__ import annotations

from . import ast
from .validate_common import (
    ALLOWED_ATTRS,
    ATOM_TYPE,
    NUMBER,
    RESERVED_RELATIONS,
    SLOT_ATTRS,
    TYPE_EXPANSION,
    TYPE_NAMES,
    Reporter,
    bare,
    show,
)


class SlotChecks(Reporter):
    """Deftemplates and slot values; expects `self.defs` and `self.expr` from the validator."""

    def template(self, t: ast.TemplateDef) -> None:
        name = bare(t.name)
        if self.import_conflict("deftemplate", name, t.pos):
            return
        if name in self.defs.templates:
            where = self.defs.template_where[name]
            if name in self.defs.used_templates:
                self.error(
                    t.pos,
                    f"[CSTRCPSR4] Cannot redefine deftemplate {name} while it is in use (defined at {where}, "
                    "used by a rule or fact since)",
                )
            else:
                self.warning(t.pos, f"deftemplate {name} redefines the one at {where}; CLIPS replaces it")
        elif name in self.defs.used_templates:
            self.error(
                t.pos,
                f"[CSTRCPSR4] Cannot redefine deftemplate {name} while it is in use: an ordered fact or pattern "
                f"({name} ...) before it made {name} an implied deftemplate; define the deftemplate first",
            )
        if name in RESERVED_RELATIONS:
            self.error(t.pos, f"'{name}' is a reserved word and cannot name a deftemplate")
        for s in t.slots.values():
            if NUMBER.fullmatch(s.name):
                self.error(s.pos, f"a slot name must be a symbol, not the number {s.name} (deftemplate {name})")
            self.slot_def(t, s)
        self.defs.add_template(name, t)
        self.defs.template_where[name] = f"{self.file}:{t.pos.line}:{t.pos.column}"

    def slot_def(self, t: ast.TemplateDef, s: ast.SlotDef) -> None:
        seen: set[str] = set()
        allowed_kinds = []
        for a in s.attributes:
            where = f"slot '{s.name}' of deftemplate {t.name}"
            if a.name not in SLOT_ATTRS:
                self.error(
                    a.pos,
                    f"unknown slot attribute '{a.name}' in {where}; expected one of: {', '.join(sorted(SLOT_ATTRS))}",
                )
                continue
            if a.name in seen:
                self.error(a.pos, f"attribute '{a.name}' given twice in {where}")
            seen.add(a.name)
            is_var_any = (
                len(a.values) == 1
                and isinstance(a.values[0], ast.Atom)
                and a.values[0].kind == "variable"
                and a.values[0].value == "VARIABLE"
            )
            if a.name == "type":
                covered: set[str] = set()
                for v in a.values:
                    if isinstance(v, ast.Atom) and v.value in TYPE_NAMES:
                        kinds_v = TYPE_EXPANSION.get(str(v.value), {str(v.value)})
                        if kinds_v & covered:
                            self.error(v.pos, f"bad constraint: type {v.value} overlaps another type in {where}")
                        covered |= kinds_v
                if not a.values:
                    self.error(a.pos, f"bad constraint: (type) needs at least one type name in {where}")
                for v in a.values:
                    if is_var_any:
                        break
                    if not (isinstance(v, ast.Atom) and v.kind == "symbol" and v.value in TYPE_NAMES):
                        self.error(
                            v.pos,
                            f"bad constraint: unknown type {show(v)} in {where}; expected one of: "
                            f"{', '.join(sorted(TYPE_NAMES))} or ?VARIABLE",
                        )
            elif a.name in ALLOWED_ATTRS:
                allowed_kinds.append(a)
                kinds = ALLOWED_ATTRS[a.name]
                if not a.values:
                    self.error(a.pos, f"bad constraint: ({a.name}) needs at least one value in {where}")
                for v in a.values:
                    if is_var_any:
                        break
                    ok = isinstance(v, ast.Atom) and v.kind in (kinds or set(ATOM_TYPE))
                    if not ok:
                        self.error(v.pos, f"bad constraint: {show(v)} is not allowed in ({a.name} ...) of {where}")
            elif a.name == "range":
                nums = [
                    v.value if isinstance(v, ast.Atom) and v.kind in ("integer", "float") else None for v in a.values
                ]
                if len(a.values) != 2 or any(
                    n is None and not (isinstance(v, ast.Atom) and v.kind == "variable" and v.value == "VARIABLE")
                    for n, v in zip(nums, a.values)
                ):
                    self.error(a.pos, f"bad constraint: (range LOW HIGH) needs two numbers or ?VARIABLE in {where}")
                elif nums[0] is not None and nums[1] is not None and nums[0] > nums[1]:
                    self.error(a.pos, f"bad constraint: range low {nums[0]} is greater than high {nums[1]} in {where}")
            elif a.name == "cardinality":
                if not s.multislot:
                    self.error(a.pos, f"bad constraint: cardinality applies only to multislots, not {where}")
                ints = [v.value if isinstance(v, ast.Atom) and v.kind == "integer" else None for v in a.values]
                if len(a.values) != 2 or any(
                    n is None
                    and not (isinstance(v, ast.Atom) and v.kind == "variable" and v.value == "VARIABLE")
                    or (n is not None and n < 0)
                    for n, v in zip(ints, a.values)
                ):
                    self.error(
                        a.pos,
                        f"bad constraint: (cardinality MIN MAX) needs two non-negative integers "
                        f"or ?VARIABLE in {where}",
                    )
                elif ints[0] is not None and ints[1] is not None and ints[0] > ints[1]:
                    self.error(a.pos, f"bad constraint: cardinality minimum exceeds maximum in {where}")
            elif a.name in ("default", "default-dynamic"):
                if "default" in seen and "default-dynamic" in seen:
                    self.error(a.pos, f"default and default-dynamic both given in {where}")
                special = (
                    len(a.values) == 1
                    and isinstance(a.values[0], ast.Atom)
                    and a.values[0].kind == "variable"
                    and a.values[0].value in ("NONE", "DERIVE")
                )
                if not special:
                    if not s.multislot and len(a.values) != 1:
                        self.error(a.pos, f"single-field {where} needs exactly one default value, got {len(a.values)}")
                    for v in a.values:
                        self.expr(v, set(), None)
                        if isinstance(v, ast.Atom) and v.kind in ATOM_TYPE:
                            self.check_value(v, s, t.name)
                    self.check_cardinality(a.pos, a.values, s, t.name, f"the {a.name} attribute")
        if len(allowed_kinds) > 1 and any(a.name == "allowed-values" for a in allowed_kinds):
            self.error(
                allowed_kinds[1].pos,
                f"bad constraint: allowed-values cannot be combined with other allowed- "
                f"attributes in slot '{s.name}' of deftemplate {t.name}",
            )

    def check_value(self, v: ast.Atom, s: ast.SlotDef, template: str) -> None:
        """Report a constant that violates the slot's type, allowed values or range."""
        atype = ATOM_TYPE.get(v.kind)
        if atype is None or not s.attributes:  # no type, allowed values or range to break
            return
        declared = set()
        for tname in s.types:
            declared |= TYPE_EXPANSION.get(tname, {tname})
        where = f"slot '{s.name}' of {template}"
        if declared and atype not in declared:
            self.error(v.pos, f"{show(v)} has type {atype} but {where} allows {' '.join(s.types)}")
            return
        for a in s.attributes:
            if a.name not in ALLOWED_ATTRS or a.name == "allowed-classes":
                continue
            vals = [x for x in a.values if isinstance(x, ast.Atom)]
            if any(x.kind == "variable" for x in vals):
                continue
            kinds = ALLOWED_ATTRS[a.name]
            if kinds is not None and v.kind not in kinds:
                continue
            if not any(v.kind == x.kind and v.value == x.value for x in vals):  # 1.0 is not 1 here
                shown = " ".join(show(x) for x in vals)
                self.error(v.pos, f"{show(v)} is not an allowed value of {where} ({a.name} {shown})")
                return
        r = s.range
        if r is not None and v.kind in ("integer", "float"):
            lo, hi = r
            if (lo is not None and v.value < lo) or (hi is not None and v.value > hi):  # type: ignore[operator]
                self.error(
                    v.pos,
                    f"{show(v)} is outside the range {lo if lo is not None else '?VARIABLE'}.."
                    f"{hi if hi is not None else '?VARIABLE'} of {where}",
                )

    def check_cardinality(self, pos: ast.Pos, values: list, s: ast.SlotDef, template: str, what: str) -> None:
        """Report multislot values whose count breaks the slot's (cardinality MIN MAX), as CLIPS's
        [CSTRNCHK1] does at load time: only when the count is known (constants, and calls to
        built-ins that return one field); a variable or a call that may return a multifield
        makes it unknown. `what`: "deffacts", "assert", "modify", "default"."""
        card = s.cardinality if s.multislot else None
        if card is None:
            return
        n = 0
        for v in values:
            if isinstance(v, ast.Atom) and v.kind in ("symbol", "string", "integer", "float", "instance_name"):
                n += 1
            elif isinstance(v, ast.Call) and (letters := self.returns(v)) and "m" not in letters:  # type: ignore[attr-defined]
                n += 1
            else:
                return
        lo, hi = card
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            self.error(
                pos,
                f"[CSTRNCHK1] {n} value(s) in {what} do not satisfy the cardinality restrictions of multislot "
                f"'{s.name}' of {template} (cardinality {lo if lo is not None else '?VARIABLE'} "
                f"{hi if hi is not None else '?VARIABLE'})",
            )
