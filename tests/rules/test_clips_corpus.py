"""Differential corpus: `kb check` agrees with real CLIPS (clipspy, the oracle) on one file per
construct of the CLIPS Basic Programming Guide and per load-time error class
(tests/rules/clips_corpus/).

The oracle is CLIPS's `load` of the file and, as `kb run` loads it, construct by construct
through CLIPS's `Build` (`chaining.forward.constructs.split_constructs`). Each file's first line states the verdict:
- `loads`: CLIPS builds every construct; check accepts (warnings allowed).
- `refuses`: CLIPS refuses a construct; check refuses with a location inside that construct.
- `skips`: CLIPS reports a construct and loads the rest ([DFFNXPSR2]); check accepts with a
  located warning and `--strict` refuses.
- `refuses_here`: a documented limit of ours (nesting over 1,000 levels) CLIPS still loads;
  check refuses with a location.
"""

from __future__ import annotations

import re
from pathlib import Path

import clips
import pytest

import rules
from chaining.forward.constructs import ConstructSyntaxError, split_constructs

CORPUS = sorted((Path(__file__).parent / "clips_corpus").glob("*.clp"))


def _claim(path: Path) -> str:
    first = path.read_bytes().decode("utf-8").splitlines()[0]
    m = re.match(r"; clips: (loads|refuses|skips|refuses_here)\b", first)
    assert m, f"{path.name}: first line must be '; clips: loads|refuses|skips|refuses_here'"
    return m[1]


def _oracle(path: Path) -> tuple[str, tuple[int, int] | None]:
    """("loads" | "refuses", (first line, last line) of the first construct CLIPS refuses)."""
    text = path.read_bytes().decode("utf-8")
    try:
        constructs = split_constructs(text, str(path))
    except ConstructSyntaxError:
        return "refuses", None
    env = clips.Environment()
    for c in constructs:
        try:
            env.build(c.text)
        except clips.CLIPSError:
            return "refuses", (c.line, c.line + c.text.count("\n"))
    try:
        clips.Environment().load(str(path))  # CLIPS's own load also refuses text between constructs
    except clips.CLIPSError:
        return "refuses", None
    return "loads", None


def test_corpus_covers_constructs_and_error_classes() -> None:
    claims = [_claim(p) for p in CORPUS]
    assert claims.count("loads") >= 30 and claims.count("refuses") >= 40 and "skips" in claims


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_check_agrees_with_clips(path: Path) -> None:
    claim = _claim(path)
    verdict, span = _oracle(path)
    assert verdict == {"loads": "loads", "refuses": "refuses", "skips": "refuses", "refuses_here": "loads"}[claim]
    errors = rules.check_files([path], allow_unsafe=True)
    everything = rules.check_files([path], allow_unsafe=True, warnings=True)
    if claim == "loads":
        assert errors == [], [str(d) for d in errors]
    elif claim == "skips":
        assert errors == []
        skipped = [d for d in everything if "DFFNXPSR2" in d.message]
        assert skipped and skipped[0].severity == "warning" and span and span[0] <= skipped[0].line <= span[1]
        assert rules.check_files([path], allow_unsafe=True, strict=True)
    else:
        assert errors, "CLIPS refuses this file; check must too"
        d = errors[0]
        assert d.file == str(path) and d.line >= 1 and d.column >= 1
        if span is not None:  # the location lies in the construct CLIPS refused
            assert span[0] <= d.line <= span[1], (str(d), span)


def test_summary_counts(capsys) -> None:
    """The corpus result table (printed with -s): files accepted / refused by CLIPS and by check."""
    rows = {"clips_loads": 0, "clips_refuses": 0, "check_accepts": 0, "check_refuses": 0, "agree": 0}
    for path in CORPUS:
        verdict, _ = _oracle(path)
        accepted = not rules.check_files([path], allow_unsafe=True)
        rows["clips_loads" if verdict == "loads" else "clips_refuses"] += 1
        rows["check_accepts" if accepted else "check_refuses"] += 1
        claim = _claim(path)
        rows["agree"] += (verdict == "loads") == accepted or claim in ("skips", "refuses_here")
    print(rows)
    assert rows["agree"] == len(CORPUS)
