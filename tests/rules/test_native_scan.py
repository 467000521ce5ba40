"""The C reader of plain-data deffacts (`rules.native_scan`) against the regular expressions of
`rules.scan` it stands in for: the same data deffacts recognised with the same spans, the same
shapes, the same parse (facts and located errors) with and without it, on every rule file in the
repository, the differential corpus, the benchmark data and mutated data."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import rules
from rules import native_scan, scan

pytestmark = pytest.mark.skipif(not native_scan.AVAILABLE, reason=f"C data reader: {native_scan.UNAVAILABLE}")

ROOT = Path(__file__).resolve().parents[2]
RULE_FILES = sorted(p for p in ROOT.rglob("*.clp") if ".venv" not in p.parts and "node_modules" not in p.parts)


def _by_regex(text: str, pos: int):
    m = scan._DEFFACTS.match(text, pos)
    if m is None:
        return None
    spans = (m.end(), *m.span("name"), *m.span("comment"), *m.span("body"))
    return spans, scan._LONG_DIGITS.search(text, m.start("body"), m.end("body")) is not None


def _by_c(text: str, pos: int):
    spans = native_scan.module.match_deffacts(text, pos)
    return None if spans is None else (tuple(spans[:7]), spans[7])


def _agree(text: str) -> int:
    """Compare both readers at every `(` of an ASCII text; returns how many data deffacts matched."""
    matched = 0
    for pos, ch in enumerate(text):
        if ch != "(":
            continue
        expected = _by_regex(text, pos)
        assert _by_c(text, pos) == expected, (pos, text[pos : pos + 80])
        if expected is not None:
            matched += 1
            (_end, *_rest, b0, b1), _ = expected
            facts = scan.FactData(text, b0, b1, scan.Lines(text))
            by_regex = facts.shapes_by_regex()
            by_c = native_scan.module.shapes(text, b0, b1)
            assert (by_c is None) == (by_regex is None)
            if by_c is not None:
                assert sorted(by_c) == sorted(by_regex)
    return matched


def _parse_both(text: str, monkeypatch) -> tuple:
    def one():
        try:
            module = rules.parse(text, "f.clp")
        except rules.RuleSyntaxError as exc:
            return ("error", str(exc))
        data = [
            (c.pos, list(c.facts), c.facts.shapes() and sorted(c.facts.shapes()))
            for c in module.constructs
            if isinstance(getattr(c, "facts", None), scan.FactData)
        ]
        diagnostics = [str(d) for d in rules.check_sources([("f.clp", text)])]
        return ("ok", [(type(c).__name__, c.pos) for c in module.constructs], data, diagnostics)

    with_c = one()
    monkeypatch.setattr(scan, "_native", None)
    without = one()
    monkeypatch.undo()
    return with_c, without


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_rule_file_reads_the_same(path: Path, monkeypatch):
    text = path.read_text(encoding="utf-8", errors="replace")
    if text.isascii():
        _agree(text)
    with_c, without = _parse_both(text, monkeypatch)
    assert with_c == without


def test_the_benchmark_data_reads_the_same(monkeypatch):
    from cli.benchmarks._rules_frontend import manners_data, waltz_data
    from cli.benchmarks._rules_published import manners_fct, waltz_fct

    for text in (
        waltz_data(3),
        manners_data(16),
        "(deffacts w " + waltz_fct(2) + ")",
        "(deffacts m " + manners_fct(8) + ")",
    ):
        assert _agree(text) == 1
        with_c, without = _parse_both(text, monkeypatch)
        assert with_c == without


# Characters that matter to the data readers: delimiters, comments, strings, escapes, the
# characters words may not hold or begin with, digits (19 in a row), whitespace CLIPS reads and
# whitespace it does not.
_ALPHABET = list('()"\\; \t\n\r\f\v<-=&|~?$[]x1.9e+') + ["0" * 19, "<-", "=", "\x01", "\x1f", "\x7f", ";c\n"]


@pytest.mark.parametrize("seed", range(200))
def test_mutated_data_reads_the_same(seed: int, monkeypatch):
    rng = random.Random(seed)
    base = [
        '(deffacts d "a comment" (u (a 1) (b "x (y) ; z")) ; c\n (u (m) (a 3)) (line 1 2.5 e5 -x) (w))',
        "(deffacts scene\n   (line (from 1) (to 2))\n   (line (from 2) (to 1)))\n",
        '(deffacts d (p a\\b "q\\"q" =x <y a<b) (q (s)))',
    ][seed % 3]
    text = base
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(text) + 1)
        if rng.random() < 0.7:
            text = text[:at] + rng.choice(_ALPHABET) + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 3) :]
    _agree(text)
    with_c, without = _parse_both(text, monkeypatch)
    assert with_c == without


def test_non_ascii_text_is_read_by_the_regular_expressions(monkeypatch):
    text = '(deffacts d (p "é" x) (q (s 1)))'
    with pytest.raises(ValueError, match="not ASCII"):
        native_scan.module.match_deffacts(text, 0)
    with_c, without = _parse_both(text, monkeypatch)
    assert with_c == without and with_c[0] == "ok" and with_c[2]  # still read as data


def test_a_reader_built_from_another_source_is_not_used(monkeypatch):
    monkeypatch.setattr(native_scan, "_digest", lambda: "0" * 16)
    module, why = native_scan._load()
    assert module is None and "another version of native_scan.c" in why
