"""Working-memory access for one CLIPS environment: assert, read and retract facts as data.

Every path here uses raw CLIPS 6.4 API calls and never retains a fact (see `clips_values`
for why clipspy's fact objects are avoided): asserting goes through the fact builder (template
facts) or a multifield (ordered facts); reading is `clips_fact_reader.FactReader`'s job.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clips._clips import ffi, lib

from rules.facts import IMPLIED, Fact, String, Symbol

from .clips_fact_reader import FactReader
from .clips_slot_errors import slot_error
from .clips_values import STRING, SYMBOL, ValueWriter, is_symbol_token, read_value
from .errors import FactAssertError

_string = ffi.string

_create_integer = lib.CreateInteger
_create_float = lib.CreateFloat
_create_symbol = lib.CreateSymbol
_put_slot = lib.FBPutSlot
_is_token = is_symbol_token

_FBE = {
    lib.FBE_NO_ERROR: "no error",
    lib.FBE_NULL_POINTER_ERROR: "internal error (null pointer)",
    lib.FBE_DEFTEMPLATE_NOT_FOUND_ERROR: "template not defined",
    lib.FBE_IMPLIED_DEFTEMPLATE_ERROR: "ordered fact given as a template fact",
    lib.FBE_COULD_NOT_ASSERT_ERROR: "could not assert (pattern matching in progress)",
    lib.FBE_RULE_NETWORK_ERROR: "error in the rule network",
}
_PSE = {
    lib.PSE_SLOT_NOT_FOUND_ERROR: "slot not defined",
    lib.PSE_TYPE_ERROR: "value of a type the slot does not allow",
    lib.PSE_RANGE_ERROR: "value outside the slot's range",
    lib.PSE_ALLOWED_VALUES_ERROR: "value not among the slot's allowed values",
    lib.PSE_CARDINALITY_ERROR: "wrong number of values for the slot",
    lib.PSE_ALLOWED_CLASSES_ERROR: "class not allowed",
    lib.PSE_INVALID_TARGET_ERROR: "invalid target",
    lib.PSE_NULL_POINTER_ERROR: "internal error (null pointer)",
}


@dataclass(slots=True)
class _TemplateInfo:
    name: str
    implied: bool
    slots: tuple[str, ...]
    slot_keys: tuple[bytes, ...]
    strings_only: dict[str, bool]  # slot -> accepts STRING but not SYMBOL
    key: bytes = b""
    slot_key: dict[str, bytes] | None = None
    slot_pairs: tuple[tuple[str, bytes], ...] = ()
    symbol_key: dict[str, bytes] | None = None  # slot -> key, for slots that may hold a SYMBOL
    string_key: dict[str, bytes] | None = None  # slot -> key, for slots that take STRING but not SYMBOL
    ptr: Any = None  # the `Deftemplate *`
    address: int = 0  # `ptr` as an int (the C read loop's key)


class WorkingMemory(FactReader):
    """Fact I/O for one CLIPS environment (`env` is clipspy's `Environment._env` pointer).

    Not thread-safe: use under the environment's lock.

    `native`: assert with the C loop (`native_facts`) when it is built (None), always (True:
    RuntimeError when it is not built) or never (False).
    """

    __slots__ = (
        "_env",
        "_env_obj",
        "_writer",
        "_fb",
        "_cv",
        "_item_cv",
        "_mb",
        "_by_name",
        "_by_ptr",
        "_by_read_name",
        "_native",
        "_native_templates",
        "_native_read_templates",
        "_read_facts",
        "_assert_facts",
    )

    def __init__(self, environment: Any, native: bool | None = None):
        self._env_obj = environment
        self._env = environment._env
        self._writer = ValueWriter(self._env)
        from clips.common import environment_builder

        self._fb = environment_builder(self._env, "fact")  # owned and disposed by clipspy
        self._cv = ffi.new("CLIPSValue *")
        self._item_cv = ffi.new("CLIPSValue *")  # one element of a multifield (assert_all)
        self._mb = environment_builder(self._env, "multifield")  # owned and disposed by clipspy
        self._by_name: dict[str, _TemplateInfo | None] = {}
        self._by_ptr: dict[Any, _TemplateInfo] = {}
        self._by_read_name: dict[str, list[_TemplateInfo]] = {}  # `facts(templates=...)` lookups
        from . import native_facts

        if native is None:
            native = native_facts.AVAILABLE
        self._native = native_facts.context(self._env, self._fb, self._mb) if native else None
        self._read_facts = native_facts.module.read_facts if native else None
        self._assert_facts = native_facts.module.assert_facts if native else None
        # template name -> (name, {slot: key}) for the C assert loop: the templates met so far
        self._native_templates: dict[str, tuple[bytes, dict[str, bytes]]] = {}
        # template address -> (name, slot names, slot keys) for the C read loop
        self._native_read_templates: dict[int, tuple[str, tuple[str, ...], tuple[bytes, ...]]] = {}

    def close(self) -> None:
        """Nothing to free: the builders belong to the clipspy environment."""

    # -- templates ---------------------------------------------------------------------
    def _template(self, name: str) -> _TemplateInfo | None:
        info = self._by_name.get(name, False)
        if info is not False:
            return info
        ptr = lib.FindDeftemplate(self._env, name.encode())
        info = self._info(ptr) if ptr != ffi.NULL else None
        self._by_name[name] = info
        return info

    def _info(self, ptr: Any) -> _TemplateInfo:
        info = self._by_ptr.get(ptr)
        if info is not None:
            return info
        name = ffi.string(lib.DeftemplateName(ptr)).decode()
        implied = bool(lib.ImpliedDeftemplate(ptr))
        slots: tuple[str, ...] = ()
        strings_only: dict[str, bool] = {}
        if not implied:
            cv = ffi.new("CLIPSValue *")
            lib.DeftemplateSlotNames(ptr, cv)
            slots = tuple(str(s) for s in read_value(cv))
            for s in slots:
                tv = ffi.new("CLIPSValue *")
                lib.DeftemplateSlotTypes(ptr, s.encode(), tv)
                types = {str(t) for t in read_value(tv)}
                strings_only[s] = "STRING" in types and "SYMBOL" not in types
        keys = tuple(s.encode() for s in slots)
        info = _TemplateInfo(
            name,
            implied,
            slots,
            keys,
            strings_only,
            name.encode(),
            dict(zip(slots, keys)),
            tuple(zip(slots, keys)),
            {s: k for s, k in zip(slots, keys) if not strings_only[s]},
            {s: k for s, k in zip(slots, keys) if strings_only[s]},
            ptr,
            int(ffi.cast("uintptr_t", ptr)),
        )
        self._by_ptr[ptr] = info
        if self._native is not None and not implied:
            self._native_read_templates[info.address] = (name, slots, keys)
        return info

    def forget_templates(self) -> None:
        """Drop cached template pointers (after constructs change)."""
        self._by_name.clear()
        self._by_ptr.clear()
        self._by_read_name.clear()
        self._native_templates.clear()
        self._native_read_templates.clear()

    # -- assert ------------------------------------------------------------------------
    def assert_fact(self, fact: Fact, where: str = "fact") -> int | None:
        """Assert one fact; returns its id, or None when CLIPS ignored it as a duplicate.

        Raises:
            FactAssertError: unknown template or slot, a value the slot refuses; names `where`.
        """
        slots = fact.slots
        info = self._by_name.get(fact.template, False)
        if info is False:
            info = self._template(fact.template)
        if info is None or info.implied or IMPLIED in slots:
            return self._assert_other(fact, info, where)
        fb = self._fb
        ret = lib.FBSetDeftemplate(fb, info.key)
        if ret != lib.FBE_NO_ERROR:
            raise FactAssertError(f"{where}: template {fact.template!r}: {_FBE.get(ret, ret)}")
        cv = self._cv
        env = self._env
        strings_only = info.strings_only
        slot_key = info.slot_key
        for slot, v in slots.items():
            so = strings_only.get(slot)
            if so is None:
                lib.FBAbort(fb)
                raise FactAssertError(
                    f"{where}.slots.{slot}: template {fact.template!r} has no slot {slot!r}; "
                    f"slots are {list(info.slots)}"
                )
            t = type(v)  # the common scalar types inline (hot path), everything else via ValueWriter
            if t is int:
                cv.value = _create_integer(env, v)
            elif t is float:
                cv.value = _create_float(env, v)
            elif t is str and not so and _is_token(v):
                cv.value = _create_symbol(env, v.encode())
            else:
                try:
                    cv.value = self._writer.value(v, so)
                except Exception:
                    lib.FBAbort(fb)
                    try:
                        self._writer.value(v, so, f"{where}.slots.{slot}")  # again, for the located message
                    except Exception as exc:
                        raise FactAssertError(str(exc)) from None
                    raise
            ret = _put_slot(fb, slot_key[slot], cv)
            if ret == lib.PSE_CARDINALITY_ERROR and not isinstance(v, (list, tuple)):
                # one value for a multislot: a multifield of one, as CLIPS reads `(tags x)`
                cv.value = self._writer.value([v], so)
                ret = _put_slot(fb, slot_key[slot], cv)
            if ret:
                lib.FBAbort(fb)
                if ret == lib.PSE_SLOT_NOT_FOUND_ERROR or info.ptr is None:
                    raise FactAssertError(f"{where}.slots.{slot}: {_PSE.get(ret, ret)} (value {v!r})")
                raise FactAssertError(slot_error(ret, where, info.ptr, slot, v, so))
        ptr = lib.FBAssert(fb)
        if ptr == ffi.NULL:
            err = lib.FBError(self._env)
            if err == lib.FBE_NO_ERROR:
                return None  # duplicate fact, ignored by CLIPS
            raise FactAssertError(f"{where}: could not assert {fact}: {_FBE.get(err, err)}")
        return lib.FactIndex(ptr)

    def _assert_other(self, fact: Fact, info: _TemplateInfo | None, where: str) -> int | None:
        if fact.is_ordered or (info is not None and info.implied):
            if info is not None and not info.implied:
                raise FactAssertError(
                    f"{where}: {fact.template!r} is a deftemplate with slots {list(info.slots)}; "
                    "give 'slots', not 'values'"
                )
            if not fact.is_ordered and fact.slots:
                raise FactAssertError(
                    f"{where}: {fact.template!r} is an ordered fact; "
                    f"give 'values', not named slots {sorted(fact.slots)}"
                )
            if info is None:
                self._by_name.pop(fact.template, None)
            return self._assert_ordered(fact.template, fact.values, where)
        if info is None:
            raise FactAssertError(f"{where}: template {fact.template!r} is not defined in this knowledge base")
        raise FactAssertError(
            f"{where}: template {fact.template!r} has no slot 'implied'; slots are {list(info.slots)}"
        )

    def _assert_ordered(self, relation: str, values: tuple, where: str) -> int | None:
        # Ordered facts have no builder in the 6.4 API: assert the printed form as a string.
        # Values are rendered by our own writer rules (symbol vs string) so the text is exact.
        parts = [relation]
        for i, v in enumerate(values):
            parts.append(_render(v, f"{where}.values[{i}]"))
        text = "(" + " ".join(parts) + ")"
        ptr = lib.AssertString(self._env, text.encode())
        if ptr == ffi.NULL:
            code = lib.GetAssertStringError(self._env)
            if code == lib.ASE_NO_ERROR:
                return None
            raise FactAssertError(f"{where}: could not assert {text} (CLIPS error code {code})")
        return int(lib.FactIndex(ptr))

    def assert_all(self, facts: Iterable[Fact], where: str = "facts") -> list[int | None]:
        """Assert facts in order; returns their ids (None for ignored duplicates).

        Template facts whose slot values are all integers, floats, symbol-like strings and
        non-empty lists of those (multifields) take a fast path (the common serving input): the
        C loop (`native_facts`) when it is built, else a Python loop. Anything else, and every
        error, goes through `assert_fact`, which names what is wrong.

        Raises:
            FactAssertError: naming the fact's index, e.g. `facts[2].slots.age: ...`.
        """
        if self._native is not None:
            return self._assert_all_native(facts if type(facts) is list else list(facts), where)
        out = []
        env, fb, cv = self._env, self._fb, self._cv
        by_name = self._by_name
        set_template, assert_fb, abort = lib.FBSetDeftemplate, lib.FBAssert, lib.FBAbort
        put, integer, floating, symbol, index = _put_slot, _create_integer, _create_float, _create_symbol, lib.FactIndex
        is_token = _is_token
        mb, item_cv = self._mb, self._item_cv
        mb_reset, mb_append, mb_create = lib.MBReset, lib.MBAppend, lib.MBCreate
        for f in facts:
            info = by_name.get(f.template)
            slots = f.slots
            if info is not None and not info.implied and set_template(fb, info.key) == 0:
                keys = info.symbol_key
                for slot, v in slots.items():
                    key = keys.get(slot)
                    t = type(v)
                    if key is None:
                        break
                    if t is int:
                        cv.value = integer(env, v)
                    elif t is float:
                        cv.value = floating(env, v)
                    elif t is str and is_token(v):
                        cv.value = symbol(env, v.encode())
                    elif (t is list or t is tuple) and v:  # a multifield of numbers and symbols
                        mb_reset(mb)
                        for item in v:
                            ti = type(item)
                            if ti is int:
                                item_cv.value = integer(env, item)
                            elif ti is float:
                                item_cv.value = floating(env, item)
                            elif ti is str and is_token(item):
                                item_cv.value = symbol(env, item.encode())
                            else:
                                break
                            mb_append(mb, item_cv)
                        else:
                            cv.value = mb_create(mb)
                            if put(fb, key, cv):
                                break
                            continue
                        break
                    else:
                        break
                    if put(fb, key, cv):
                        break
                else:
                    ptr = assert_fb(fb)
                    if ptr != ffi.NULL:
                        out.append(index(ptr))
                        continue
                abort(fb)  # not for the fast path (or CLIPS refused it): again, slowly, for the message
            out.append(self._assert_checked(f, where, len(out)))
        return out

    def _assert_all_native(self, facts: list, where: str) -> list[int | None]:
        """`assert_all` with the C loop: it asserts facts while they fit its path and stops at the
        first that does not; `assert_fact` asserts that one (and words any error), then the loop
        goes on from the next."""
        out: list[int | None] = []
        run, context, templates = self._assert_facts, self._native, self._native_templates
        i = run(context, facts, 0, templates, out, Symbol, String)
        while i < len(facts):  # (a duck-typed fact's properties could change the list)
            f = facts[i]
            out.append(self._assert_checked(f, where, i))
            info = self._by_name.get(f.template)
            if info is not None and not info.implied and f.template not in templates:
                templates[f.template] = (info.key, info.symbol_key, info.string_key)
            i = run(context, facts, i + 1, templates, out, Symbol, String)
        return out

    def _assert_checked(self, fact: Fact, where: str, index: int) -> int | None:
        """`assert_fact` with its error located as `where[index]...`."""
        try:
            return self.assert_fact(fact, "fact")
        except FactAssertError as exc:
            msg = str(exc)
            raise FactAssertError(f"{where}[{index}]" + msg[4:] if msg.startswith("fact") else msg) from None


def _render(value: Any, where: str) -> str:
    from rules.facts import FactError, Symbol, is_symbol_token, quote_string

    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):  # CLIPS would read `inf`/`nan` as symbols
            raise FactError(f"{where}: {value!r} cannot be a value of an ordered fact (not a finite number)")
        return repr(value)
    if isinstance(value, str):
        if type(value) is String or (type(value) is not Symbol and not is_symbol_token(value)):
            return quote_string(value)
        if not is_symbol_token(value):
            raise FactError(f"{where}: {value!r} is not a valid CLIPS symbol")
        return value
    if isinstance(value, (tuple, list)):
        return " ".join(_render(v, f"{where}[{i}]") for i, v in enumerate(value))
    raise FactError(f"{where}: unsupported value {value!r} of type {type(value).__name__}")


__all__ = ["WorkingMemory", "SYMBOL", "STRING"]
