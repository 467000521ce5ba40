"""Reading working memory of one CLIPS environment: facts as `Fact` values, by id or template.

The read side of `WorkingMemory` (clips_memory.py holds the template cache and the assert
side): walks `GetNextFact` / `GetNextFactInTemplate` and copies slot values out, with the C
loop (`native_facts`) when it is built, and never retains a clipspy fact object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clips._clips import ffi, lib

from rules.facts import IMPLIED, Fact, String
from rules.facts import Symbol as _Symbol

from .clips_values import FLOAT, INTEGER, SYMBOL, read_value

if TYPE_CHECKING:
    from .clips_memory import _TemplateInfo

_string = ffi.string


class FactReader:
    """Mixin of `WorkingMemory`: the attributes it reads are set by `WorkingMemory.__init__`."""

    __slots__ = ()

    # -- read --------------------------------------------------------------------------
    def fact_ids(self) -> list[int]:
        """Ids of the facts in working memory, in id order."""
        out = []
        f = lib.GetNextFact(self._env, ffi.NULL)
        while f != ffi.NULL:
            out.append(lib.FactIndex(f))
            f = lib.GetNextFact(self._env, f)
        return out

    def facts(self, templates: frozenset[str] | None = None) -> list[Fact]:
        """The facts in working memory, in id order, as `Fact` values with ids.

        `templates`: read only facts of these templates (None: all), named as `Fact.template`
        names them (a template of any module) or as `MODULE::name`; only those facts are
        visited (CLIPS keeps a fact list per template).
        """
        read_along = self._read_native if self._native is not None else self._read_python_along
        if templates is None:
            return read_along(None)
        out: list[Fact] = []
        read = 0
        for name in templates:
            for info in self.templates_named(name):
                out += read_along(info)
                read += 1
        if len(out) > 1 and read > 1:
            out.sort(key=_fact_id)
        return out

    def read_one(self, fact: Any) -> Fact:
        """The fact at `fact` (a `Fact *` of clipspy's ffi, e.g. in a retract callback) as a `Fact` with its id."""
        return self._read_python(fact, None, one=True)[0]

    def templates_named(self, name: str) -> list[_TemplateInfo]:
        """The templates a fact's `template` name can denote: `name` in every module (as
        `Fact.template` gives it, without module), or exactly `MODULE::name`. Found lists
        are cached; an empty one is not (a relation may first appear during a run)."""
        found = self._by_read_name.get(name)
        if found is not None:
            return found
        env = self._env
        if "::" in name:
            ptrs = [lib.FindDeftemplate(env, name.encode())]
        else:
            ptrs = []
            mod = lib.GetNextDefmodule(env, ffi.NULL)
            while mod != ffi.NULL:
                ptrs.append(lib.FindDeftemplate(env, ffi.string(lib.DefmoduleName(mod)) + b"::" + name.encode()))
                mod = lib.GetNextDefmodule(env, mod)
        found = []
        for ptr in ptrs:
            if ptr != ffi.NULL and all(info.ptr != ptr for info in found):  # an imported template is found again
                found.append(self._info(ptr))
        if found:
            self._by_read_name[name] = found
        return found

    def _read_native(self, info: _TemplateInfo | None) -> list[Fact]:
        """Read the whole fact list (`info` None) or one template's facts with the C loop
        (`native_facts`), which stops at the first fact it cannot read; Python reads that one
        (an ordered fact, a multifield value, a template met for the first time), and so on."""
        read, context, templates = self._read_facts, self._native, self._native_read_templates
        along = 0 if info is None else info.address
        out: list[Fact] = []
        address = read(context, 0, along, templates, Fact, _Symbol, String, out)
        while address:
            fact = ffi.cast("Fact *", address)
            ptr = lib.FactDeftemplate(fact)
            if self._by_ptr.get(ptr) is None:
                self._info(ptr)  # learns the template (and hands it to the C loop)
            out += self._read_python(fact, None if info is None else info.ptr, one=True)
            nxt = lib.GetNextFact(self._env, fact) if info is None else lib.GetNextFactInTemplate(info.ptr, fact)
            address = (
                read(context, int(ffi.cast("uintptr_t", nxt)), along, templates, Fact, _Symbol, String, out)
                if nxt
                else 0
            )
        return out

    def _read_python_along(self, info: _TemplateInfo | None) -> list[Fact]:
        """Read the whole fact list (`info` None) or one template's facts in Python."""
        if info is None:
            return self._read_python(lib.GetNextFact(self._env, ffi.NULL), None)
        return self._read_python(lib.GetNextFactInTemplate(info.ptr, ffi.NULL), info.ptr)

    def _read_python(self, f: Any, template: Any, one: bool = False) -> list[Fact]:
        """Read facts from `f` on: along the whole fact list (`template` None), or along one
        template's facts (`template`: its `Deftemplate *`); `one`: only the fact `f`."""
        out: list[Fact] = []
        append = out.append
        cv = self._cv
        by_ptr = self._by_ptr
        get_slot = lib.GetFactSlot
        fact_template, fact_index = lib.FactDeftemplate, lib.FactIndex
        # GetNextFact(env, f) and GetNextFactInTemplate(template, f) take the same arguments
        get_next, along = (lib.GetNextFact, self._env) if template is None else (lib.GetNextFactInTemplate, template)
        string = _string
        symbol = _Symbol
        new = object.__new__
        setattr_ = object.__setattr__
        null = ffi.NULL
        while f:
            info = by_ptr.get(fact_template(f))
            if info is None:
                info = self._info(fact_template(f))
            if info.implied:
                get_slot(f, null, cv)
                slots = {IMPLIED: read_value(cv)}
            else:
                slots = {}
                for name, key in info.slot_pairs:
                    get_slot(f, key, cv)
                    t = cv.header.type
                    if t == SYMBOL:  # the common scalar types inline (hot path)
                        slots[name] = symbol(string(cv.lexemeValue.contents).decode())
                    elif t == INTEGER:
                        slots[name] = cv.integerValue.contents
                    elif t == FLOAT:
                        slots[name] = cv.floatValue.contents
                    else:
                        slots[name] = read_value(cv)
            fact = new(Fact)  # values read from CLIPS are valid already: skip Fact's checks
            setattr_(fact, "template", info.name)
            setattr_(fact, "slots", slots)
            setattr_(fact, "id", fact_index(f))
            append(fact)
            if one:
                break
            f = get_next(along, f)
        return out

    # -- retract -----------------------------------------------------------------------
    def retract(self, fact_id: int) -> bool:
        """Retract the fact with this id; False when no such fact is in working memory."""
        f = lib.GetNextFact(self._env, ffi.NULL)
        while f != ffi.NULL:
            if lib.FactIndex(f) == fact_id:
                return lib.Retract(f) == lib.RE_NO_ERROR
            f = lib.GetNextFact(self._env, f)
        return False


def _fact_id(fact: Fact) -> int:
    return fact.id
