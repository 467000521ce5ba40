"""Review 17 of the C reader of rule text (rules/native_read*.c), cases in cases/clips_reader/:
the grammar (lark) reads only the constructs the C reader leaves to it, not the whole file; the
scan helpers refuse an offset outside the text instead of reading outside it; a keyword is a
whole word (`(defrulex =>)` is no rule)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import rules
from rules import native_read, parser_lark

CASES = Path(__file__).parent / "cases" / "clips_reader"
ROOT = Path(__file__).resolve().parents[2]
needs_reader = pytest.mark.skipif(not native_read.AVAILABLE, reason=f"C reader: {native_read.UNAVAILABLE}")


@pytest.fixture
def lark_reads(monkeypatch) -> list[str]:
    """The texts given to lark's parser, in order."""
    seen: list[str] = []
    parser = parser_lark._lark()

    class Spy:
        def parse(self, text: str):
            seen.append(text)
            return parser.parse(text)

        def __getattr__(self, name):
            return getattr(parser, name)

    monkeypatch.setattr(parser_lark, "_lark", lambda: Spy())
    return seen


@needs_reader
def test_a_stray_paren_after_a_big_rule_sends_only_the_paren_to_lark(lark_reads):
    """04_fallback_forced_cost: one `)` at the end sent the whole upload to lark (4 MiB: 72 s, 2.1 GiB)."""
    text = "(defrule r (a) => (x " + "= " * 100_000 + "))" + " )"
    with pytest.raises(rules.RuleSyntaxError) as caught:
        rules.parse(text, "f.clp")
    assert str(caught.value) == f"f.clp:1:{len(text)}: unmatched ')': no construct is open here"
    assert lark_reads == [")"]


@needs_reader
def test_only_the_construct_the_reader_leaves_goes_to_lark_with_file_positions(lark_reads):
    text = (
        "(defrule a (p) =>)\n(deftemplate t\n  (slot s))\n(defrule b (p 99999999999999999999) =>)\n(defrule c (q) =>)"
    )
    module = rules.parse(text, "f.clp")
    assert lark_reads == ["(defrule b (p 99999999999999999999) =>)"]
    b = module.constructs[2]
    assert (b.name, b.pos.line, b.pos.column, b.pos.start_offset) == ("b", 4, 1, text.index("(defrule b"))
    (warning,) = module.diagnostics
    assert (warning.line, warning.column) == (4, 15)
    assert [c.name for c in module.constructs] == ["a", "t", "b", "c"]


@needs_reader
def test_a_duplicate_slot_is_reported_by_the_reader_without_lark(lark_reads):
    """A 100,000-slot template with a duplicate at the end took 14 s: read in C, then again by lark."""
    slots = " ".join(f"(slot s{i})" for i in range(20_000))
    text = f"(deftemplate t {slots} (slot s0))"
    with pytest.raises(rules.RuleSyntaxError) as caught:
        rules.parse(text, "f.clp")
    assert str(caught.value) == f"f.clp:1:{text.rindex('s0') + 1}: duplicate slot 's0' in deftemplate t"
    assert lark_reads == []


@needs_reader
def test_a_syntax_error_after_a_duplicate_slot_wins_as_with_the_whole_file(lark_reads):
    text = "(deftemplate t (slot a) (slot a))\n(defrule r (p) => ) )"
    with pytest.raises(rules.RuleSyntaxError) as caught:
        rules.parse(text, "f.clp")
    assert str(caught.value) == "f.clp:2:21: unmatched ')': no construct is open here"


_CHILD = """
from rules import _native_read as m
for call in ((m.skip, ("abc", -10**15)), (m.skip, ("abc", -1)), (m.skip, ("abc", 4)),
             (m.construct_end, ("abc", -10**15, 5)), (m.scan_constructs, ("abc", -10**15, 5))):
    try:
        call[0](*call[1])
    except ValueError as exc:
        assert str(exc) == "span out of the text", exc
    else:
        raise SystemExit(f"no ValueError from {call}")
print("ok", m.skip("  abc", 0), m.construct_end("(a)", 0, 5))
"""


@needs_reader
def test_scan_helpers_refuse_an_offset_outside_the_text():
    """01_native_read_helper_negative_pos: skip("abc", -10**15) was a SIGSEGV, skip("abc", -1) read before the data."""
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok 2 3", (done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize("name", ["02_prefix_construct_keyword.clp", "03_prefix_slot_kind.clp"])
def test_a_keyword_is_a_whole_word(name: str):
    """`(defrulex =>)` was a rule `x`, `(deftemplate t (slotx))` a slot `x`; CLIPS refuses both."""
    text = (CASES / name).read_text()
    with pytest.raises(rules.RuleSyntaxError) as caught:
        rules.parse(text, name)
    (d,) = caught.value.diagnostics
    first_bad = {"02_prefix_construct_keyword.clp": (1, 2, "unknown construct 'defrulex'")}.get(
        name, (1, 17, "unexpected 'slotx' in deftemplate")
    )
    assert (d.line, d.column) == first_bad[:2] and d.message.startswith(first_bad[2])
