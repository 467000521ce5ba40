"""Messages for a slot value CLIPS's fact builder refuses (`PutSlot` errors): the value as CLIPS would
hold it (its type and text) and what the slot allows, read from the deftemplate itself, e.g.
`facts[0].slots.qty: the string "lots" is not allowed: slot qty of item takes INTEGER`."""

from __future__ import annotations

import json
from typing import Any

from clips._clips import ffi, lib

from rules.facts import String, Symbol

from .clips_values import is_symbol_token, read_value


def describe(value: Any, strings_only: bool) -> str:
    """The value as it would be asserted: 'the symbol TRUE', 'the string "a b"', 'the integer 3', ...

    A plain str is a symbol where it reads as one and the slot takes symbols, else a string (as
    `ValueWriter` asserts it); JSON true/false arrive as the symbols TRUE/FALSE.
    """
    if isinstance(value, Symbol):
        return f"the symbol {value}"
    if isinstance(value, (String, str)):
        if not isinstance(value, String) and not strings_only and is_symbol_token(value):
            return f"the symbol {value}"
        return f"the string {json.dumps(str(value), ensure_ascii=False)}"
    if isinstance(value, bool):
        return f"the symbol {'TRUE' if value else 'FALSE'}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the float {value!r}"
    if isinstance(value, (list, tuple)):
        return f"a multifield of {len(value)} value(s)"
    return repr(value)


def _slot_facet(function: Any, template: Any, slot: str) -> list[Any]:
    cv = ffi.new("CLIPSValue *")
    if not function(template, slot.encode(), cv):
        return []
    value = read_value(cv)
    return list(value) if isinstance(value, (list, tuple)) else [value]


def slot_error(code: int, where: str, template: Any, slot: str, value: Any, strings_only: bool) -> str:
    """The located message for `PutSlot`'s error `code` on `slot` of deftemplate pointer `template`.

    Args:
        where: the JSON path of the fact (`facts[0]`, `body.facts[2]`); the message starts with
            `{where}.slots.{slot}`.
    """
    name = ffi.string(lib.DeftemplateName(template)).decode()
    head = f"{where}.slots.{slot}: {describe(value, strings_only)} is not allowed: slot {slot} of {name}"
    if code == lib.PSE_TYPE_ERROR:
        return f"{head} takes {' or '.join(str(t) for t in _slot_facet(lib.DeftemplateSlotTypes, template, slot))}"
    if code == lib.PSE_ALLOWED_VALUES_ERROR:
        allowed = " ".join(str(v) for v in _slot_facet(lib.DeftemplateSlotAllowedValues, template, slot))
        return f"{head} allows only {allowed}"
    if code == lib.PSE_RANGE_ERROR:
        lo, hi = (_slot_facet(lib.DeftemplateSlotRange, template, slot) + ["?VARIABLE", "?VARIABLE"])[:2]
        return f"{head} takes numbers in the range {lo} to {hi}"
    if code == lib.PSE_CARDINALITY_ERROR and lib.DeftemplateSlotSingleP(template, slot.encode()):
        return f"{head} is a single-field slot (one value, not a list)"
    if code == lib.PSE_CARDINALITY_ERROR:
        lo, hi = (_slot_facet(lib.DeftemplateSlotCardinality, template, slot) + ["?VARIABLE", "?VARIABLE"])[:2]
        return f"{head} takes {lo} to {hi} values"
    return f"{head} refuses it (CLIPS PutSlot error {code})"
