"""Seeded, bounded rule-file fuzzing (issue 16): token-level mutants of the shipped
knowledge_bases/*.clp, plus the hostile shapes that once crashed `kb check` (deep nesting,
4,301-digit integers, NUL bytes, duplicate switch cases, integer overflow).

For every mutant: `kb check` (its library call, `rules.check_sources`) returns diagnostics and
never raises; its verdict matches CLIPS's (clipspy, loading construct by construct as `kb run`
does); and the whole batch through the real `workbench kb check` in a child process ends
without a signal and without a traceback. Bounded: MUTANTS files, at most BUDGET_S seconds.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
from pathlib import Path

import clips

import rules
from chaining.forward.constructs import ConstructSyntaxError, split_constructs

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "knowledge_bases").glob("*.clp"))
SEED = int(__import__("os").environ.get("FUZZ_SEED", "20261201"))
MUTANTS = 400
BUDGET_S = 20.0
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|;[^\n]*|[()]|[^\s()"]+')
INSERTS = [
    "(",
    ")",
    "?x",
    "$?y",
    "?",
    "$?",
    "=",
    "~",
    "&",
    "|",
    ":",
    "=>",
    "<-",
    "not",
    "or",
    "and",
    "test",
    "logical",
    "exists",
    "forall",
    "slot",
    "multislot",
    "field",
    "multifield",
    "deftemplate",
    "defrule",
    "(declare (salience 5))",
    "=(+ 1 2)",
    ":(> 1 0)",
    "1e309",
    "9223372036854775808",
    "1" * 4301,
    '"a\x00b"',
    '"unterminated',
    "(switch 1 (case 1 then a) (case 1 then b))",
    "[inst]",
    "?*g*",
    "(" * 600 + "x" + ")" * 600,
    "(+ 1 " * 400 + "0" + ")" * 400,
    "é",
    "\t",
    "\\",
]


def mutate(text: str, rng: random.Random) -> str:
    """One to three edits: delete, duplicate, replace with another token, or insert a hostile token."""
    for _ in range(rng.randint(1, 3)):
        toks = [m for m in TOKEN.finditer(text) if not m.group().startswith(";")]
        if not toks:
            break
        m = rng.choice(toks)
        r = rng.random()
        if r < 0.3:
            repl = ""
        elif r < 0.45:
            repl = m.group() + " " + m.group()
        elif r < 0.65:
            repl = rng.choice(toks).group()
        else:
            repl = rng.choice(INSERTS) + " " + m.group() if rng.random() < 0.5 else rng.choice(INSERTS)
        text = text[: m.start()] + repl + text[m.end() :]
    return text


def clips_loads(text: str, path: Path) -> bool:
    """CLIPS's verdict: it loads the file (`load`, which also refuses text between constructs)
    and builds every construct as `kb run` does (`Build`, which also refuses NUL bytes)."""
    env = clips.Environment()
    try:
        env.load(str(path))
    except clips.CLIPSError:
        return False
    try:
        constructs = split_constructs(text)
    except ConstructSyntaxError:
        return False
    env = clips.Environment()
    for c in constructs:
        try:
            env.build(c.text)
        except clips.CLIPSError:
            return False
    return True


def _ours_agrees(text: str, diagnostics: list) -> bool:
    """Where our verdict may differ by design: the 1,000-level nesting limit (CLIPS goes deeper)."""
    return any("nested deeper than" in d.message for d in diagnostics)


def test_mutants_check_never_crashes_and_agrees_with_clips(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    sources = [p.read_text() for p in SHIPPED]
    start = time.monotonic()
    disagreements, written = [], []
    for i in range(MUTANTS):
        if time.monotonic() - start > BUDGET_S:
            break
        text = mutate(rng.choice(sources), rng)
        diags = rules.check_sources([(f"m{i}.clp", text)], allow_unsafe=True)  # must not raise
        assert all(d.line >= 1 and d.column >= 1 for d in diags)
        path = tmp_path / f"m{i}.clp"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        written.append(path)
        ours = not diags
        theirs = clips_loads(text, path)
        if ours != theirs and not (not ours and _ours_agrees(text, diags)):
            disagreements.append((i, "check accepts" if ours else str(diags[0])[:200]))
    assert len(written) >= 100, f"only {len(written)} mutants in {BUDGET_S} s"
    assert disagreements == [], disagreements[:10]
    # The real command, in one child process over every mutant: no signal, no traceback.
    code = (
        "import sys; from cli.app import main\n"
        "for f in sys.argv[1:]:\n"
        "    sys.argv = ['workbench', 'kb', 'check', '--allow-unsafe', f]\n"
        "    try:\n        main()\n"
        "    except SystemExit as e:\n        assert e.code in (0, 1), (f, e.code)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, *map(str, written)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stdout + r.stderr, r.stderr[-2000:]
