"""Conversion between fact data (`rules.facts`) and CLIPS values, without leaking CLIPS memory.

JSON/Python -> CLIPS:
    int -> INTEGER, float -> FLOAT, bool -> the symbol TRUE/FALSE, tuple/list -> multifield
    (flat; CLIPS multifields do not nest). `rules.facts.Symbol` -> SYMBOL and
    `rules.facts.String` -> STRING always. A plain `str` (everything that comes from JSON) is a
    SYMBOL when it is a valid CLIPS symbol token and the slot accepts symbols, and a STRING
    otherwise: `"dog"` -> `dog`, `"Rex the dog"` -> `"Rex the dog"`, and a slot declared
    `(type STRING)` always gets a string.
CLIPS -> Python:
    SYMBOL -> `Symbol`, STRING -> `String` (both `str`; JSON output shows both as strings),
    INTEGER -> int, FLOAT -> float, multifield -> tuple, fact address -> the symbol
    `<Fact-N>` as CLIPS prints it, instance name -> `Symbol("[name]")`.

Why this module exists: clipspy 1.0.6 wraps every fact it returns (`Template.assert_fact`,
`Environment.facts()`, fact addresses passed to Python functions) in an object that calls
`RetainFact` and whose `__del__` calls `ReleaseFact(env, fact)` — two arguments for a
one-argument CLIPS 6.4 function. The TypeError is swallowed, so no fact is ever released:
retracted facts stay busy in CLIPS's garbage list and every later reset and retraction scans
them, so each evaluation gets slower than the last. Here no fact is ever retained: facts are
asserted through the fact builder and read straight into Python data.
"""

from __future__ import annotations

from typing import Any

from clips._clips import ffi, lib

from rules.facts import FactError, String, Symbol, is_symbol_token

FLOAT, INTEGER, SYMBOL, STRING, MULTIFIELD, EXTERNAL, FACT_ADDRESS, INSTANCE_ADDRESS, INSTANCE_NAME, VOID = range(10)


class ValueWriter:
    """Builds CLIPS values in one environment; reuses one multifield builder.

    Not thread-safe: one per environment, used under that environment's lock.
    """

    __slots__ = ("_env", "_mb", "_symbols")

    def __init__(self, env: Any):
        from clips.common import environment_builder

        self._env = env
        self._mb = environment_builder(env, "multifield")  # owned and disposed by clipspy
        self._symbols: dict[str, Any] = {}

    def value(self, value: Any, strings: bool = False, where: str = "value") -> Any:
        """The CLIPS value (a `TypeHeader *`-compatible pointer) for a Python value.

        `strings=True` means the slot accepts strings but not symbols: plain `str` becomes STRING.

        Raises:
            FactError: for nested lists, None or other unsupported types, naming `where`.
        """
        env = self._env
        t = type(value)
        if t is int:
            return lib.CreateInteger(env, value)
        if t is float:
            return lib.CreateFloat(env, value)
        if t is bool:
            return lib.CreateSymbol(env, b"TRUE" if value else b"FALSE")
        if isinstance(value, str):
            if t is String or (t is not Symbol and (strings or not is_symbol_token(value))):
                return lib.CreateString(env, value.encode())
            return lib.CreateSymbol(env, value.encode())
        if isinstance(value, (tuple, list)):
            if not value:
                return lib.EmptyMultifield(env)
            parts = []
            for i, item in enumerate(value):
                if isinstance(item, (tuple, list)):
                    raise FactError(f"{where}[{i}]: CLIPS multifields do not nest; got a list inside a list")
                parts.append(self.value(item, strings, f"{where}[{i}]"))
            mb = self._mb
            lib.MBReset(mb)
            cv = ffi.new("CLIPSValue *")
            for p in parts:
                cv.value = p
                lib.MBAppend(mb, cv)
            return lib.MBCreate(mb)
        if isinstance(value, int):  # int subclasses (numpy ints arrive as int only after conversion)
            return lib.CreateInteger(env, int(value))
        if isinstance(value, float):
            return lib.CreateFloat(env, float(value))
        raise FactError(f"{where}: unsupported value {value!r} of type {t.__name__}; expected string, number or list")


_string = ffi.string


def read_multifield(mf: Any) -> tuple:
    """Python tuple for a `Multifield *` (symbols and integers inline: the hot path)."""
    out = []
    append = out.append
    contents = mf.contents
    for i in range(mf.length):
        v = contents + i  # `contents` is declared `CLIPSValue[1]`: pointer arithmetic, not indexing
        t = v.header.type
        if t == SYMBOL:
            append(Symbol(_string(v.lexemeValue.contents).decode()))
        elif t == INTEGER:
            append(v.integerValue.contents)
        else:
            append(read_value(v))
    return tuple(out)


def read_value(value: Any) -> Any:
    """Python data for a `CLIPSValue *` / `UDFValue *` (see the module docstring for the mapping)."""
    t = value.header.type
    if t == SYMBOL:
        return Symbol(_string(value.lexemeValue.contents).decode())
    if t == INTEGER:
        return value.integerValue.contents
    if t == STRING:
        return String(_string(value.lexemeValue.contents).decode())
    if t == FLOAT:
        return value.floatValue.contents
    if t == MULTIFIELD:
        return read_multifield(value.multifieldValue)
    if t == FACT_ADDRESS:
        return Symbol(f"<Fact-{lib.FactIndex(value.factValue)}>")
    if t == INSTANCE_NAME:
        return Symbol("[" + _string(value.lexemeValue.contents).decode() + "]")
    if t == VOID:
        return None
    return Symbol(f"<external-{t}>")
