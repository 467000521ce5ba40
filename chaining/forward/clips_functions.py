"""Python functions called from rules: argument and result conversion for CLIPS.

Callers register functions explicitly (`ForwardEngine.from_knowledge_base(kb, functions={...})`);
clipspy's `define_function` makes each callable from CLIPS by name. This adapter converts
arguments to our value types (`Symbol`, `String`, numbers, tuples; a fact address becomes a
`rules.facts.Fact` snapshot) and converts the result back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import clips
from clips._clips import ffi, lib

from rules.facts import Fact, String, Symbol

from .clips_values import read_value


def wrap_function(fn: Callable) -> Callable:
    """Adapt a Python function for CLIPS: arguments as our value types (a fact address becomes a
    `Fact` snapshot and is released at once), results converted back (`Symbol` -> symbol,
    `str`/`String` -> string, `bool` -> TRUE/FALSE, list/tuple -> multifield, None -> nil)."""
    from clips.facts import Fact as ClipsFact

    def call(*args: Any) -> Any:
        conv = []
        for a in args:
            if isinstance(a, ClipsFact):
                conv.append(_snapshot(a))
            elif isinstance(a, clips.Symbol):
                conv.append(Symbol(a))
            elif type(a) is str:
                conv.append(String(a))
            else:
                conv.append(a)
        return _to_clipspy(fn(*conv))

    call.__name__ = getattr(fn, "__name__", "function")
    return call


def _snapshot(fact: Any) -> Fact:
    # clipspy retained this fact and will never release it (its __del__ passes two arguments to
    # the one-argument ReleaseFact); copy the data, release the retain ourselves, detach it.
    ptr = fact._fact
    tpl = lib.FactDeftemplate(ptr)
    name = ffi.string(lib.DeftemplateName(tpl)).decode()
    cv = ffi.new("CLIPSValue *")
    if lib.ImpliedDeftemplate(tpl):
        lib.GetFactSlot(ptr, ffi.NULL, cv)
        snap = Fact(name, {"implied": read_value(cv)}, int(lib.FactIndex(ptr)))
    else:
        names = ffi.new("CLIPSValue *")
        lib.FactSlotNames(ptr, names)
        slots = {}
        for s in read_value(names):
            lib.GetFactSlot(ptr, str(s).encode(), cv)
            slots[str(s)] = read_value(cv)
        snap = Fact(name, slots, int(lib.FactIndex(ptr)))
    lib.ReleaseFact(ptr)
    return snap


def _to_clipspy(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if type(value) is Symbol:
        return clips.Symbol(str(value))
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_to_clipspy(v) for v in value]
    if isinstance(value, Fact):
        raise TypeError("a Python function may not return a Fact to CLIPS; return its values instead")
    return value
