"""The parser's own position propagation (`rules.parser._fast_positions`) gives every tree the span
lark's `PropagatePositions` gives it, on every rule file in the repository (so a lark upgrade that
changes what the spans mean fails here instead of misplacing diagnostics)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lark.exceptions import UnexpectedInput

from rules import parser as P
from rules import scan

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for d in ("tests", "knowledge_bases") for p in (ROOT / d).rglob("*.clp") if p.stat().st_size < 200_000)
SPAN = ("line", "column", "start_pos", "end_line", "end_column", "end_pos")


def _spans(tree) -> list:
    """Every subtree, top down, iteratively (deep files nest 500 levels): its rule, its span and its tokens."""
    return [
        (
            t.data,
            None if t.meta.empty else tuple(getattr(t.meta, k) for k in SPAN),
            [(c.type, str(c)) for c in t.children if not hasattr(c, "data")],
        )
        for t in tree.iter_subtrees_topdown()
    ]


@pytest.fixture(scope="module")
def parsers():
    plain = P._plain_lark()
    assert P._lark() is not plain and P._fast_positions(P._plain_lark()) is not None
    return P._lark(), plain


def test_the_corpus_is_large(parsers):
    assert len(FILES) > 150


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_spans_agree_with_lark(parsers, path):
    fast, plain = parsers
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        lark_text = scan.prescan(text)[0]
    except scan.ScanError:
        pytest.skip("refused before the grammar")
    if not lark_text:
        pytest.skip("nothing for the grammar")
    try:
        expected = plain.parse(lark_text)
    except UnexpectedInput:
        with pytest.raises(UnexpectedInput):
            fast.parse(lark_text)
        return
    assert _spans(fast.parse(lark_text)) == _spans(expected)
