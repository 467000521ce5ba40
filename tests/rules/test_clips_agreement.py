"""Every rule file in the repository (each on its own): our checker accepts it exactly when real
CLIPS loads it. Unsafe functions are allowed here (CLIPS has no such check); the malformed
corpus has its own test."""

from __future__ import annotations

from pathlib import Path

import clips
import pytest

import rules

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    p for p in ROOT.rglob("*.clp") if not {".venv", "malformed", "node_modules", "clips_corpus", "cases"} & set(p.parts)
)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_checker_agrees_with_clips(path: Path) -> None:
    env = clips.Environment()
    try:
        env.load(str(path))
        clips_ok = True
    except clips.CLIPSError:
        clips_ok = False
    diagnostics = rules.check_files([path], allow_unsafe=True)
    assert (not diagnostics) == clips_ok, [str(d) for d in diagnostics]


def test_mutated_files_never_rejected_when_clips_loads_them(tmp_path: Path) -> None:
    """Random one-token mutations of well-formed files: whenever CLIPS loads the result, so do we.

    (Our only deliberate extra checks, unsafe functions and a redefined rule or template, are
    excluded: unsafe use is allowed here and redefinitions are filtered out.)"""
    import random
    import re

    rng = random.Random(20261130)
    sources = [p.read_text() for p in FILES if "wellformed" in p.parts or "knowledge_bases" in p.parts]
    token = re.compile(r'"(?:[^"\\]|\\.)*"|;[^\n]*|[()]|[^\s()"]+')
    extra = ["?x", "foo", "(", ")", "1", '"s"', "$?y", "~", "&", "|", "=>", "test", "not", "slot"]
    false_rejections = []
    for i in range(150):
        src = rng.choice(sources)
        toks = [m for m in token.finditer(src) if not m.group().startswith(";")]
        m = rng.choice(toks)
        r = rng.random()
        repl = "" if r < 0.4 else (rng.choice(extra) if r < 0.6 else rng.choice(toks).group())
        path = tmp_path / f"m{i}.clp"
        path.write_text(src[: m.start()] + repl + src[m.end() :])
        env = clips.Environment()
        try:
            env.load(str(path))
        except clips.CLIPSError:
            continue
        ds = [d for d in rules.check_files([path], allow_unsafe=True) if "is already defined" not in d.message]
        if ds:
            false_rejections.append((m.group(), repl, str(ds[0])))
    assert false_rejections == []
