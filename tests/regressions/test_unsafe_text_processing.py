"""Regression (review): CLIPS's text-processing functions `fetch`, `get-region`, `print-region` and
`toss` were not in the safety gate, so an uploaded rule file could read files on the server
(`PUT /v1/kb/leak` then `POST /v1/kb/leak/run` printed a file's content)."""

from __future__ import annotations

import pytest

import rules


@pytest.mark.parametrize(
    "call",
    [
        '(fetch "/etc/hostname")',
        '(get-region "/etc/hostname" MAIN)',
        '(print-region t "/etc/hostname" MAIN)',
        '(toss "/etc/hostname")',
    ],
)
def test_file_reading_functions_are_refused(call):
    text = f"(defrule r => {call})"
    with pytest.raises(rules.UnsafeConstructError, match=r"unsafe function '[a-z-]+'"):
        rules.knowledge_base_from_text("leak", text)
    assert rules.knowledge_base_from_text("leak", text, allow_unsafe=True).rules
